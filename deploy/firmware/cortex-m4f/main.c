/* Runs the exported policy (embodia_policy.h) on the fixed observations of inputs.h and
 * prints each raw action as the hex bits of its floats, one line per observation, so the host
 * reads them back exactly. Each forward pass runs between calls of bench_begin and bench_end,
 * which an instruction trace uses to count the instructions of one pass. */
#include <stdint.h>
#include <string.h>
#include "embodia_policy.h"
#include "inputs.h"
#include "semihosting.h"

/* Empty, never inlined: their entry addresses mark a forward pass in an execution trace. */
__attribute__((noinline)) void bench_begin(void) { __asm__ volatile(""); }
__attribute__((noinline)) void bench_end(void) { __asm__ volatile(""); }

static char *put_hex(char *p, uint32_t v) {
    int shift;
    for (shift = 28; shift >= 0; shift -= 4) *p++ = "0123456789abcdef"[(v >> shift) & 0xF];
    return p;
}

static char *put_decimal(char *p, uint32_t v) {
    char digits[10];
    int n = 0;
    do { digits[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n) *p++ = digits[--n];
    return p;
}

int main(void) {
    enum { OUTPUT_DIM = EMBODIA_POLICY_CHUNK * EMBODIA_POLICY_ACTION_DIM };
    static char line[OUTPUT_DIM * 9 + 32];
    float action[OUTPUT_DIM];
    int n, j;
    for (n = 0; n < N_INPUTS; ++n) {
        char *p = line;
        bench_begin();
        embodia_policy_forward(INPUTS[n], action);
        bench_end();
        for (j = 0; j < OUTPUT_DIM; ++j) {
            uint32_t bits;
            memcpy(&bits, &action[j], sizeof bits);
            p = put_hex(p, bits);
            *p++ = j + 1 < OUTPUT_DIM ? ' ' : '\n';
        }
        *p = '\0';
        semihost_write(line);
    }
    {
        char *p = line;
        memcpy(p, "stack ", 6);
        p = put_decimal(p + 6, stack_high_water_bytes());
        *p++ = '\n';
        *p = '\0';
        semihost_write(line);
    }
    return 0;
}
