// OpenSSL's libcrypto, used only for the SHA-1 of the XEP-0114 handshake.
#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H
#include <openssl/sha.h>
#endif
