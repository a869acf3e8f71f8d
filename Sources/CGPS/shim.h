#ifndef GEOTRIGGER_CGPS_SHIM_H
#define GEOTRIGGER_CGPS_SHIM_H
#include <gps.h>
#endif
