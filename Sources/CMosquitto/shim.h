#ifndef GEOTRIGGER_CMOSQUITTO_SHIM_H
#define GEOTRIGGER_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#include <mqtt_protocol.h>
#endif
