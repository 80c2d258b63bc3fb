// libsodium for the Sealing target. Constants that are macros of macros do not reach Swift:
// call their function forms (crypto_box_publickeybytes()) instead.
#ifndef CSODIUM_SHIM_H
#define CSODIUM_SHIM_H
#include <sodium.h>
#endif
