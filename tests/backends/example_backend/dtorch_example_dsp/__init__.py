"""An example third-party backend: a DSP that runs int8 fully connected layers (and the flatten before them) whose
input features are a multiple of 8."""

from dtorch.backends import Backend, Constraint, OpSupport


def _aligned(node):
    k = node.inputs[1].shape[1]
    return None if k % 8 == 0 else f"{k} input features, not a multiple of 8 (the DSP's vector width)"


class ExampleDsp(Backend):
    description = "an example DSP (a test package): int8 fully connected layers"
    supports = (
        OpSupport("qlinear", ("int8",), "dsp:fc", (Constraint("alignment", "input features a multiple of 8", _aligned),)),
        OpSupport("reshape", ("int8",), "dsp:view"),
    )

    def estimate(self, nodes, batch_scale=1.0):
        from dtorch.backends import SubgraphEstimate

        return SubgraphEstimate(0.01 * len(nodes))

    def transfer_ms(self, nbytes):
        return nbytes / 1e6
