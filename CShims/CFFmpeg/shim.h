// CFFmpeg: libavformat, libavcodec, libswresample and libavutil for Swift.
//
// Apt providers: libavformat-dev, libavcodec-dev, libswresample-dev, libavutil-dev.
//
// This header re-exports the FFmpeg headers and adds, as prefixed static inline
// functions, only what Swift's C importer cannot see: function-like macros and
// macros whose value is a cast expression. No playback logic lives here.
#ifndef HARMONIA_CFFMPEG_SHIM_H
#define HARMONIA_CFFMPEG_SHIM_H

#include <errno.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/opt.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>

/// AVERROR(e) is a function-like macro: Swift cannot call it.
static inline int hc_averror(int posix_errno) { return AVERROR(posix_errno); }

/// AVERROR_EOF and AVERROR_INVALIDDATA expand through FFERRTAG/MKTAG casts,
/// which the importer drops.
static inline int hc_averror_eof(void) { return AVERROR_EOF; }
static inline int hc_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int hc_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int hc_averror_stream_not_found(void) { return AVERROR_STREAM_NOT_FOUND; }

/// AV_NOPTS_VALUE is a cast expression ((int64_t)UINT64_C(...)), not imported.
static inline int64_t hc_nopts_value(void) { return AV_NOPTS_VALUE; }

/// av_err2str is a macro around a compound literal; this writes the message
/// into a caller-provided buffer instead (av_strerror, never a format string).
static inline void hc_av_strerror(int errnum, char *buffer, size_t size) {
    if (av_strerror(errnum, buffer, size) < 0 && size > 0) {
        buffer[0] = '\0';
    }
}

#endif
