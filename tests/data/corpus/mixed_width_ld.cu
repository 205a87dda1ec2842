// Byte and short loads/stores with sign and zero extension, unaligned-by-type offsets within a buffer.
extern "C" __global__ void mixed_width_ld(const unsigned char* a, const short* b, int* out, unsigned char* bytes, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    signed char sc = (signed char)a[i];
    unsigned char uc = a[i];
    short s = b[i];
    unsigned short us = (unsigned short)b[i];
    out[4 * i + 0] = sc * 3;
    out[4 * i + 1] = uc * 3;
    out[4 * i + 2] = s * 5;
    out[4 * i + 3] = us * 5;
    bytes[i] = (unsigned char)(uc + sc);
}
