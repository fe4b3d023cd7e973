// CCurl: libcurl's easy interface for Swift.
//
// Apt provider: libcurl4-openssl-dev.
//
// This header re-exports curl.h and adds, as prefixed static inline
// functions, only what Swift's C importer cannot call: curl_easy_setopt and
// curl_easy_getinfo are variadic, so each argument type gets a typed wrapper.
// No network logic lives here.
#ifndef HARMONIA_CCURL_SHIM_H
#define HARMONIA_CCURL_SHIM_H

#include <curl/curl.h>

/// curl_easy_setopt for options that take a long.
static inline CURLcode hc_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for options that take a curl_off_t (…_LARGE).
static inline CURLcode hc_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for options that take a pointer (strings are copied by libcurl).
static inline CURLcode hc_curl_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}

/// The write and header callbacks' type, for CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION.
typedef size_t (*hc_curl_data_callback)(char *data, size_t size, size_t count, void *user);

/// curl_easy_setopt for CURLOPT_WRITEFUNCTION / CURLOPT_HEADERFUNCTION.
static inline CURLcode hc_curl_setopt_data_callback(CURL *handle, CURLoption option, hc_curl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

/// The progress callback's type, for CURLOPT_XFERINFOFUNCTION.
typedef int (*hc_curl_progress_callback)(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);

/// curl_easy_setopt for CURLOPT_XFERINFOFUNCTION.
static inline CURLcode hc_curl_setopt_progress_callback(CURL *handle, hc_curl_progress_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

/// curl_easy_getinfo for values that are a long.
static inline CURLcode hc_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// curl_easy_getinfo for values that are a string (owned by libcurl).
static inline CURLcode hc_curl_getinfo_string(CURL *handle, CURLINFO info, const char **value) {
    return curl_easy_getinfo(handle, info, value);
}


#endif
