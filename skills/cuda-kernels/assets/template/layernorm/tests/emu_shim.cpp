// The ks::layer_norm launcher as C functions for the CPU emulator (tests/emulation.py).
#include "../kernel_src/launchers.h"
#include "emu_shim.h"

EMU_SHIM(ks::LayerNormArgs, ks::layer_norm)
