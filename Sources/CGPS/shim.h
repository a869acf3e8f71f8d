#ifndef GEOTRIGGER_CGPS_SHIM_H
#define GEOTRIGGER_CGPS_SHIM_H
// Every libgps quirk the Swift wrapper (Sources/GPSD) needs, so the Swift side is the same for
// each libgps API version. Debian 12 ships libgps API 11 (gpsd 3.22); the branches below keep
// older and newer headers compiling.
//
// libgps is NOT linked (no `link "gps"` in the module map, no pkgConfig in Package.swift, whose
// `pkg-config --libs libgps` would add -lgps): it pulls in libdbus, libsystemd, libgcrypt, ...
// (~1 MB resident in every gateway process), and most gateways have no gpsd feed. gps.h gives
// the types, the struct layouts and the macros; the six functions the wrapper calls are
// resolved with dlopen/dlsym when the first gpsd connection is opened, into a
// `geotrigger_gps_functions` table that every wrapper below takes. Calling a libgps function
// directly from Swift fails the link ("undefined reference to gps_open"): go through this file.
//
// Once per process: the Swift side (GPSD/LibraryLoader.swift) keeps the loaded table under a
// lock and calls geotrigger_gps_load at most once successfully. The state is not kept here
// because Swift emits the static inline functions of this header into every object file that
// calls them, each with its own copy of any static variable (one pthread_once per object file).
#include <gps.h>
#include <dlfcn.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

/* Names the calling thread (the reader's: "gpsd-reader"), for top -H and
   /proc/PID/task/TID/comm; prctl is variadic, which Swift cannot call. */
static inline void geotrigger_gps_name_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

/// The libgps functions the wrapper calls, with gps.h's own prototypes (so an API whose
/// signatures differ still type-checks here, never in Swift).
struct geotrigger_gps_functions {
    __typeof__(gps_open) *open;
    __typeof__(gps_close) *close;
    __typeof__(gps_stream) *stream;
    __typeof__(gps_read) *read;
    __typeof__(gps_waiting) *waiting;
    __typeof__(gps_errstr) *errstr;
#if GPSD_API_MAJOR_VERSION < 7
    __typeof__(gps_data) *data; // the raw report before API 7 (see geotrigger_gps_read)
#endif
};

/// The sonames of the upstream libgps releases built with this header's API major version,
/// most widespread first; NULL past the last. From gpsd's SConstruct at each release tag
/// (libgps_version_current, age 0): 3.17 API 6 .so.23; 3.18 API 7 .so.24; 3.19 API 8 .so.25;
/// 3.20 API 9 .so.25 upstream, libgps26 in Debian and Ubuntu (the soname upstream then took
/// for the 3.21 cycle); 3.21 API 10 .so.27; 3.22 API 11 .so.28 (Debian 12, Ubuntu 22.04:
/// package libgps28); 3.23 API 12 .so.29; 3.24 API 14 .so.29; 3.25 and 3.26 API 14 .so.30
/// (Debian 13, Ubuntu 24.04: libgps30); 3.26.1 API 14 .so.31; 3.27 API 16 .so.32.
/// Only sonames of the same API major are listed: the wrapper reads struct gps_data_t by the
/// offsets of these headers, so a libgps of another API would corrupt memory instead of failing.
static inline const char *geotrigger_gps_soname(int index) {
    static const char *const names[] = {
#if GPSD_API_MAJOR_VERSION == 6
        "libgps.so.23",
#elif GPSD_API_MAJOR_VERSION == 7
        "libgps.so.24",
#elif GPSD_API_MAJOR_VERSION == 8
        "libgps.so.25",
#elif GPSD_API_MAJOR_VERSION == 9
        "libgps.so.26", "libgps.so.25",
#elif GPSD_API_MAJOR_VERSION == 10
        "libgps.so.27",
#elif GPSD_API_MAJOR_VERSION == 11
        "libgps.so.28",
#elif GPSD_API_MAJOR_VERSION == 12
        "libgps.so.29",
#elif GPSD_API_MAJOR_VERSION == 14
        "libgps.so.30", "libgps.so.31", "libgps.so.29",
#elif GPSD_API_MAJOR_VERSION == 16
        "libgps.so.32",
#endif
        NULL,
    };
    if (index < 0 || (size_t)index >= sizeof names / sizeof names[0]) return NULL;
    return names[index];
}

/// Opens `file` (a soname, a name dlopen searches for, or a path) and resolves the six
/// functions into `functions`. RTLD_NOW: a missing symbol fails here, not at the first call;
/// RTLD_LOCAL: libgps's symbols stay out of the process's global namespace.
/// Returns the handle (keep it open while `functions` is used), or NULL with dlerror()'s text
/// copied into `error` (`capacity` bytes; copied because dlclose may reset dlerror's buffer).
static inline void *geotrigger_gps_load(const char *file, struct geotrigger_gps_functions *functions,
                                        char *error, size_t capacity) {
    if (capacity > 0) error[0] = '\0';
    dlerror();
    void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *text = dlerror();
        if (capacity > 0) snprintf(error, capacity, "%s", text != NULL ? text : "dlopen failed");
        return NULL;
    }
    // POSIX guarantees a data pointer from dlsym converts to a function pointer.
#define GEOTRIGGER_GPS_RESOLVE(field, name)                                           \
    functions->field = (__typeof__(functions->field))dlsym(handle, name);            \
    if (functions->field == NULL) {                                                   \
        const char *text = dlerror();                                                 \
        if (capacity > 0) snprintf(error, capacity, "%s", text != NULL ? text : name); \
        dlclose(handle);                                                              \
        return NULL;                                                                  \
    }
    GEOTRIGGER_GPS_RESOLVE(open, "gps_open")
    GEOTRIGGER_GPS_RESOLVE(close, "gps_close")
    GEOTRIGGER_GPS_RESOLVE(stream, "gps_stream")
    GEOTRIGGER_GPS_RESOLVE(read, "gps_read")
    GEOTRIGGER_GPS_RESOLVE(waiting, "gps_waiting")
    GEOTRIGGER_GPS_RESOLVE(errstr, "gps_errstr")
#if GPSD_API_MAJOR_VERSION < 7
    GEOTRIGGER_GPS_RESOLVE(data, "gps_data")
#endif
#undef GEOTRIGGER_GPS_RESOLVE
    return handle;
}

/// Closes a handle from geotrigger_gps_load (the library stays mapped while others use it).
static inline void geotrigger_gps_unload(void *handle) { dlclose(handle); }

/// gps_open(host, port, data): 0 on success, < 0 on error (code in errno).
static inline int geotrigger_gps_open(const struct geotrigger_gps_functions *functions,
                                      const char *host, const char *port, struct gps_data_t *data) {
    return functions->open(host, port, data);
}

/// gps_close(data).
static inline int geotrigger_gps_close(const struct geotrigger_gps_functions *functions,
                                       struct gps_data_t *data) {
    return functions->close(data);
}

/// gps_waiting(data, timeout in microseconds): whether a report is waiting.
static inline bool geotrigger_gps_waiting(const struct geotrigger_gps_functions *functions,
                                          const struct gps_data_t *data, int microseconds) {
    return functions->waiting(data, microseconds);
}

/// gps_errstr(code): libgps's text for one of its negative codes.
static inline const char *geotrigger_gps_errstr(const struct geotrigger_gps_functions *functions,
                                                int code) {
    return functions->errstr(code);
}

/// gps_read: API 7 added the buffer that receives the raw JSON line of the report just read.
/// Returns what gps_read returns: < 0 on error or end of stream.
static inline int geotrigger_gps_read(const struct geotrigger_gps_functions *functions,
                                      struct gps_data_t *data, char *message, int length) {
#if GPSD_API_MAJOR_VERSION >= 7
    return functions->read(data, message, length);
#else
    int status = functions->read(data);
    if (message != NULL && length > 0) {
        const char *raw = functions->data(data);
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
static inline int geotrigger_gps_stream(const struct geotrigger_gps_functions *functions,
                                        struct gps_data_t *data, unsigned int flags) {
    return functions->stream(data, flags, NULL);
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
