// CRC-32C for the object checksums Cloud Storage reports (crc32c). Written in C for the processor's own CRC32
// instruction where there is one (SSE 4.2, chosen at run time, so the build needs no flags): the server checksums
// every upload and download, and a table walk in Swift costs seconds per hundred megabytes in a debug build.
#include "storesh_checksum.h"

#include <string.h>

static uint32_t table[8][256];
static int table_ready;

static void make_table(void) {
    for (uint32_t index = 0; index < 256; index++) {
        uint32_t crc = index;
        for (int bit = 0; bit < 8; bit++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        table[0][index] = crc;
    }
    for (uint32_t index = 0; index < 256; index++) {
        for (int slice = 1; slice < 8; slice++) {
            table[slice][index] = (table[slice - 1][index] >> 8) ^ table[0][table[slice - 1][index] & 0xFF];
        }
    }
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

/// Slicing-by-8: eight bytes a step from eight tables.
static uint32_t update_by_table(uint32_t crc, const uint8_t *bytes, size_t count) {
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) make_table();  // idempotent: a race computes the same
    while (count >= 8) {
        uint32_t low, high;
        memcpy(&low, bytes, 4);
        memcpy(&high, bytes + 4, 4);
        low ^= crc;  // little-endian, as every machine storesh runs on
        crc = table[7][low & 0xFF] ^ table[6][(low >> 8) & 0xFF] ^ table[5][(low >> 16) & 0xFF] ^ table[4][low >> 24] ^
              table[3][high & 0xFF] ^ table[2][(high >> 8) & 0xFF] ^ table[1][(high >> 16) & 0xFF] ^ table[0][high >> 24];
        bytes += 8;
        count -= 8;
    }
    while (count--) crc = table[0][(crc ^ *bytes++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t update_by_instruction(uint32_t crc, const uint8_t *bytes, size_t count) {
    uint64_t wide = crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        wide = __builtin_ia32_crc32di(wide, word);
        bytes += 8;
        count -= 8;
    }
    uint32_t narrow = (uint32_t)wide;
    while (count--) narrow = __builtin_ia32_crc32qi(narrow, *bytes++);
    return narrow;
}
#endif

uint32_t storesh_crc32c_update(uint32_t state, const uint8_t *bytes, size_t count) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) return update_by_instruction(state, bytes, count);
#endif
    return update_by_table(state, bytes, count);
}
