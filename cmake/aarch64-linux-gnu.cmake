# SPDX-License-Identifier: Apache-2.0
# Cross-building zerodp for 64-bit ARM (aarch64) on a Debian x86-64 host with
# Debian's cross toolchain and multiarch :arm64 libraries; the tests run under
# qemu-user (scripts/test-arm64 installs all of it).
#   cmake -S . -B build-arm64 -G Ninja --toolchain cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Test programs (and gtest's test discovery) run through the emulator.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# pkg-config (OpenBLAS) reads the arm64 .pc files, never the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# -march=native means the build machine; the target is any ARMv8-A CPU.
set(ZERODP_NATIVE OFF CACHE BOOL "" FORCE)
