// emu_shim.h - one launcher of kernel_src/ as C functions, for the CPU emulator.
// tests/emu_shim.cpp says EMU_SHIM(ArgsType, launcher); tests/emulation.py builds
// kernel_src/*.cu + that file with <skill>/scripts/emulate_kernel.py --shared and calls
//   emu_launch(&args, schedule)   run the launcher on the CPU (schedule: 0 forward, 1 reverse
//                                 warp order; a missing barrier fails in one of them)
//   emu_args_size()               sizeof(ArgsType): the ctypes mirror must match it
//   emu_failure()                 why the last launch failed (deadlock, divergent barrier, ...)
// Only compiled by the emulator build (cuda_emu.h is force-included there).
#pragma once

#include <cstddef>
#include <string>

#define EMU_SHIM(ARGS, LAUNCHER)                                           \
  extern "C" int emu_launch(const ARGS* args, int schedule) {              \
    emu::set_schedule(static_cast<emu::Schedule>(schedule), 17);           \
    return static_cast<int>(LAUNCHER(*args, nullptr));                     \
  }                                                                        \
  extern "C" size_t emu_args_size() { return sizeof(ARGS); }               \
  extern "C" const char* emu_failure() {                                   \
    static std::string text;                                               \
    text = emu::last_failure();                                            \
    return text.c_str();                                                   \
  }
