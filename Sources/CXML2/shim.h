// libxml2 for the XMLStream target only. Debian builds libxml2 with ICU, and its encoding.h then
// includes ICU's headers, whose UErrorCode collides with the copy inside Foundation: any module that
// sees both (XMLStream's clients load this module for layout even through `internal import`) fails
// to build. XMLStream never uses libxml2's ICU conversion, so the switch is turned off before the
// headers that read it.
#ifndef CXML2_SHIM_H
#define CXML2_SHIM_H
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
#endif
