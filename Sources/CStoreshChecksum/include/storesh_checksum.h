#ifndef STORESH_CHECKSUM_H
#define STORESH_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/// Continues a CRC-32C (Castagnoli) over `count` bytes. `state` is the running register (start with 0xFFFFFFFF,
/// finish by inverting), so that content can be checksummed a piece at a time.
uint32_t storesh_crc32c_update(uint32_t state, const uint8_t *bytes, size_t count);

#endif
