/* ARM semihosting calls of the start-up code (startup.c). */
#ifndef SEMIHOSTING_H
#define SEMIHOSTING_H
#include <stdint.h>

/* Writes a NUL-terminated string to the host's console. */
void semihost_write(const char *text);
/* Ends the emulation: QEMU exits with status 0 if success is non-zero, 1 otherwise. */
void semihost_exit(int success) __attribute__((noreturn));
/* Bytes of stack ever written since reset (the stack is painted at reset). */
uint32_t stack_high_water_bytes(void);

#endif
