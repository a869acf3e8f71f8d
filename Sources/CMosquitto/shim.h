#ifndef GEOTRIGGER_CMOSQUITTO_SHIM_H
#define GEOTRIGGER_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * libmosquitto 2.0 has no asynchronous connect that takes MQTT v5 CONNECT properties:
 * only the blocking mosquitto_connect_bind_v5() stores them (in mosq->connect_properties,
 * which every later reconnect sends again). It copies the properties BEFORE it validates
 * the host, so calling it with host NULL stores them and returns MOSQ_ERR_INVAL without
 * touching the network; mosquitto_connect_async() then connects with them. The
 * properties are checked first, so an INVAL here can only come from the NULL host.
 * Checked against lib/connect.c of 2.0.11 (Debian 12) up to 2.0.18.
 */
static inline int geotrigger_mosquitto_connect_async_v5(struct mosquitto *mosq, const char *host,
                                                         int port, int keepalive,
                                                         const mosquitto_property *properties) {
    if (properties != NULL) {
        int rc = mosquitto_property_check_all(CMD_CONNECT, properties);
        if (rc != MOSQ_ERR_SUCCESS) return rc;
        rc = mosquitto_connect_bind_v5(mosq, NULL, port, keepalive, NULL, properties);
        if (rc != MOSQ_ERR_INVAL) return rc == MOSQ_ERR_SUCCESS ? MOSQ_ERR_UNKNOWN : rc;
    }
    return mosquitto_connect_async(mosq, host, port, keepalive);
}

/* Bytes received on `fd` and not read yet (FIONREAD); -1 on error. ioctl is variadic, which
 * Swift cannot call. */
static inline int geotrigger_socket_unread_bytes(int fd) {
    int count = 0;
    if (fd < 0 || ioctl(fd, FIONREAD, &count) != 0) return -1;
    return count;
}

/* The calling thread's kernel id (gettid(2)); glibc's wrapper needs _GNU_SOURCE, which Swift's
   Glibc module does not define. */
static inline int geotrigger_thread_id(void) {
    return (int)syscall(SYS_gettid);
}


/* Names the calling thread (at most 15 bytes show), for top -H and /proc/PID/task/TID/comm;
   prctl is variadic, which Swift cannot call. */
static inline void geotrigger_name_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

/* A non-blocking eventfd (close-on-exec) that wakes a thread out of poll(2); -1 on error. The
   flags are macros over an enum, which Swift does not import. */
static inline int geotrigger_wake_fd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

#endif
