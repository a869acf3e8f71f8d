#ifndef GEOTRIGGER_CGPS_SHIM_H
#define GEOTRIGGER_CGPS_SHIM_H
// Every libgps quirk the Swift wrapper (Sources/GPSD) needs, so the Swift side is the same for
// each libgps API version. Debian 12 ships libgps API 11 (gpsd 3.22); the branches below keep
// older and newer headers compiling.
#include <gps.h>
#include <math.h>
#include <string.h>

/// gps_read: API 7 added the buffer that receives the raw JSON line of the report just read.
/// Returns what gps_read returns: < 0 on error or end of stream.
static inline int geotrigger_gps_read(struct gps_data_t *data, char *message, int length) {
#if GPSD_API_MAJOR_VERSION >= 7
    return gps_read(data, message, length);
#else
    int status = gps_read(data);
    if (message != NULL && length > 0) {
        const char *raw = gps_data(data);
        if (raw == NULL) {
            message[0] = '\0';
        } else {
            strncpy(message, raw, (size_t)length - 1);
            message[length - 1] = '\0';
        }
    }
    return status;
#endif
}

/// gps_stream with the watch flags; the third argument (a device path) is unused here.
static inline int geotrigger_gps_stream(struct gps_data_t *data, unsigned int flags) {
    return gps_stream(data, flags, NULL);
}

/// The flags that start streaming JSON reports, and the one that stops it.
static inline unsigned int geotrigger_watch_enable_json(void) { return WATCH_ENABLE | WATCH_JSON; }
static inline unsigned int geotrigger_watch_disable(void) { return WATCH_DISABLE; }

/// Whether the last report set all of `mask`'s bits in data->set (gps_mask_t is 32 bits before
/// API 9 and 64 bits after).
static inline int geotrigger_set_has(const struct gps_data_t *data, unsigned long long mask) {
    return ((unsigned long long)data->set & mask) == mask;
}
static inline unsigned long long geotrigger_mode_set(void) { return MODE_SET; }
static inline unsigned long long geotrigger_latlon_set(void) { return LATLON_SET; }
static inline unsigned long long geotrigger_time_set(void) { return TIME_SET; }

/// The fix time in seconds since 1970: a timestamp_t (double) before API 9, a timespec_t since.
static inline double geotrigger_fix_time(const struct gps_fix_t *fix) {
#if GPSD_API_MAJOR_VERSION >= 9
    return (double)fix->time.tv_sec + (double)fix->time.tv_nsec * 1e-9;
#else
    return fix->time;
#endif
}

/// Altitude above mean sea level in metres (NaN if unknown): `altitude` before API 9, then
/// `altMSL` (API 9 deprecated `altitude` and split it into altHAE and altMSL).
static inline double geotrigger_fix_altitude_msl(const struct gps_fix_t *fix) {
#if GPSD_API_MAJOR_VERSION >= 9
    return fix->altMSL;
#else
    return fix->altitude;
#endif
}

#endif
