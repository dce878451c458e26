// The ks::glu launcher as C functions for the CPU emulator (tests/emulation.py).
#include "../kernel_src/launchers.h"
#include "emu_shim.h"

EMU_SHIM(ks::GluArgs, ks::glu)
