// The ks::rope launcher as C functions for the CPU emulator (tests/emulation.py).
#include "../kernel_src/launchers.h"
#include "emu_shim.h"

EMU_SHIM(ks::RopeArgs, ks::rope)
