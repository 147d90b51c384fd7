"""The host side of the dtorch agent protocol (runtime/apps/agent/PROTOCOL.md): `dtorch-edge flash` and
`dtorch-edge device ...`.

- `frames`: the frame codec (COBS, CRC-32, the drop rules, the payload formats);
- `link`: the reliable link over a pyserial port (retransmission, the PUT_DATA window, resume, errors);
- `client`: `AgentClient`, one method per request;
- `flash`: installing a bundle folder;
- `serve`: an emulated board (the bundle's real dtorch-agent) on a loopback socket or a pty.
"""
