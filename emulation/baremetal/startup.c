/* Start-up code of the bare-metal firmware (Cortex-M, any of the emulated machines): the vector table, and a reset
 * handler that copies .data from flash, zeroes .bss, turns the FPU on where there is one, runs the static
 * constructors (the kernels register themselves in them) and calls main. Faults stop the machine through
 * semihosting with a failure status, so an emulated run never hangs on one. Symbols come from link.ld. */
#include <stdint.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
extern void (*__preinit_array_start[])(void), (*__preinit_array_end[])(void);
extern void (*__init_array_start[])(void), (*__init_array_end[])(void);
int main(void);

static void semihosting_stop(uint32_t reason) {
  register uint32_t r0 __asm__("r0") = 0x18; /* SYS_EXIT */
  register uint32_t r1 __asm__("r1") = reason;
  for (;;) __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
}

static void write0(const char* s) {
  register uint32_t r0 __asm__("r0") = 0x04; /* SYS_WRITE0 */
  register const char* r1 __asm__("r1") = s;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
}

void Fault_Handler(void) {
  write0("{\"ok\": false, \"stage\": \"fault\", \"error\": \"the core took a fault (HardFault, MemManage, BusFault or "
         "UsageFault): a stack overflow or a bad memory access\"}\n");
  semihosting_stop(0x20023); /* ADP_Stopped_RunTimeErrorUnknown */
}

void Reset_Handler(void) {
  uint32_t* src = &_sidata;
  for (uint32_t* dst = &_sdata; dst < &_edata;) *dst++ = *src++;
  for (uint32_t* dst = &_sbss; dst < &_ebss;) *dst++ = 0;
#if defined(__ARM_FP)
  /* CPACR: full access to CP10 and CP11 (the FPU), then synchronise before the first FP instruction. */
  *(volatile uint32_t*)0xE000ED88 |= (0xFu << 20);
  __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
  for (void (**f)(void) = __preinit_array_start; f < __preinit_array_end; ++f) (*f)();
  for (void (**f)(void) = __init_array_start; f < __init_array_end; ++f) (*f)();
  main();
  semihosting_stop(0x20026); /* ADP_Stopped_ApplicationExit */
}

/* Cortex-M: the initial stack pointer, then the handlers (reset, NMI, HardFault, MemManage, BusFault, UsageFault). */
__attribute__((section(".isr_vector"), used)) void (*const g_vectors[16])(void) = {
    (void (*)(void))(&_estack), Reset_Handler, Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, 0, 0, 0, 0, Fault_Handler, Fault_Handler, 0, Fault_Handler, Fault_Handler,
};
