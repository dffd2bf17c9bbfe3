/* Bare-metal start-up for a Cortex-M4F (QEMU mps2-an386): vector table, reset handler that
 * copies .data, zeroes .bss, paints the stack (to measure its high-water mark) and enables
 * the FPU, and ARM semihosting for output and exit. No C library start-up code is used. */
#include <stdint.h>
#include "semihosting.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
int main(void);

/* The word every unused stack location holds until something writes it. */
#define STACK_PAINT 0xC0FFEE11u
/* Bytes at the top of RAM painted at reset: the stack high-water mark is measured up to this. */
#define STACK_PAINTED 8192u

static inline uint32_t semihost(uint32_t op, const void *arg) {
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void semihost_write(const char *text) { semihost(0x04 /* SYS_WRITE0 */, text); }

void semihost_exit(int success) {
    /* SYS_EXIT with ADP_Stopped_ApplicationExit: QEMU exits with status 0; any other reason
     * (here ADP_Stopped_RunTimeErrorUnknown) makes it exit with status 1. */
    semihost(0x18, (const void *)(uintptr_t)(success ? 0x20026u : 0x20023u));
    for (;;) {}
}

uint32_t stack_high_water_bytes(void) {
    const uint32_t *p = &_estack - STACK_PAINTED / 4;
    if (p < &_ebss) p = &_ebss;
    while (p < &_estack && *p == STACK_PAINT) ++p;
    return (uint32_t)((uintptr_t)&_estack - (uintptr_t)p);
}

__attribute__((noreturn)) void reset_handler(void) {
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata) *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss; ++dst) *dst = 0;
    /* Paint the top STACK_PAINTED bytes of RAM below the stack pointer (not all of RAM: that
     * would bloat the instruction traces the benchmark reads). Everything below sp is unused:
     * there are no interrupts. */
    {
        uint32_t *p = &_estack - STACK_PAINTED / 4, *sp;
        __asm__ volatile("mov %0, sp" : "=r"(sp));
        if (p < &_ebss) p = &_ebss;
        while (p < sp) *p++ = STACK_PAINT;
    }
    /* CPACR: full access to coprocessors 10 and 11 (the FPU). */
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb");
    semihost_exit(main() == 0);
}

static void fault_handler(void) {
    semihost_write("FAULT\n");
    semihost_exit(0);
}

__attribute__((section(".vectors"), used)) static const uintptr_t vectors[16] = {
    (uintptr_t)&_estack,
    (uintptr_t)reset_handler,
    (uintptr_t)fault_handler, /* NMI */
    (uintptr_t)fault_handler, /* HardFault */
    (uintptr_t)fault_handler, /* MemManage */
    (uintptr_t)fault_handler, /* BusFault */
    (uintptr_t)fault_handler, /* UsageFault */
};
