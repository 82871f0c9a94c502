/* Stand-in for Windows' bcryptprimitives.dll under Wine 8, which lacks it: only ProcessPrng, which Rust's
   standard library imports. See README.md. */
#include <windows.h>
#include <bcrypt.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (BCryptGenRandom(NULL, data, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
