// libxml2 for the XMLStream target only. Debian builds it with ICU, whose headers collide with
// Foundation's own copy, so no target that imports Foundation may import this module.
#ifndef CXML2_SHIM_H
#define CXML2_SHIM_H
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
#endif
