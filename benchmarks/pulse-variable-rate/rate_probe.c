// Where does pa_stream_update_sample_rate land on a PA_STREAM_VARIABLE_RATE
// stream? Plays 2 s of a 1000 Hz sine at 44.1 kHz, then 2 s of a 1000 Hz
// sine at 48 kHz, and changes the stream's rate to 48 kHz either when the
// first 48 kHz frame is written (mode "write") or when the server's read
// index (timing info, polled every 2 ms) reaches it (mode "read"). Recorded
// from the sink's monitor, frames played at the wrong rate sound at
// 1088.4 Hz (44.1 kHz frames at 48 kHz) or 918.75 Hz (the reverse).
// Built and run by run.sh. Usage: rate_probe write|read [latency_ms]
#include <math.h>
#include <pulse/pulseaudio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pa_threaded_mainloop *loop;
static pa_stream *stream;
static const long oldRate = 44100, newRate = 48000;
static const long boundary = 2 * 44100, total = 2 * 44100 + 2 * 48000;
static long written;
static double phase;
static int readMode, switched, finished;

static void update_rate(void) {
    pa_operation *op = pa_stream_update_sample_rate(stream, newRate, NULL, NULL);
    if (!op) { fprintf(stderr, "update_sample_rate: %s\n", pa_strerror(pa_context_errno(pa_stream_get_context(stream)))); exit(1); }
    pa_operation_unref(op);
    switched = 1;
}

static void write_cb(pa_stream *s, size_t nbytes, void *user) {
    (void)user;
    while (nbytes >= 8 && written < total) {
        float buffer[2048];
        long frames = (long)(nbytes / 8);
        if (frames > 1024) frames = 1024;
        if (written < boundary && written + frames > boundary) frames = boundary - written;
        if (written + frames > total) frames = total - written;
        if (written == boundary && !readMode && !switched) update_rate();
        double rate = written < boundary ? oldRate : newRate;
        for (long i = 0; i < frames; i++) {
            float v = (float)(0.5 * sin(phase));
            buffer[2 * i] = buffer[2 * i + 1] = v;
            phase += 2 * M_PI * 1000.0 / rate;
        }
        if (pa_stream_write(s, buffer, (size_t)frames * 8, NULL, 0, PA_SEEK_RELATIVE) < 0) exit(1);
        written += frames;
        nbytes -= (size_t)frames * 8;
    }
    if (written >= total && !finished) finished = 1;
}

static void state_cb(pa_context *c, void *user) { (void)c; (void)user; pa_threaded_mainloop_signal(loop, 0); }
static void stream_state_cb(pa_stream *s, void *user) { (void)s; (void)user; pa_threaded_mainloop_signal(loop, 0); }
static void done_cb(pa_stream *s, int ok, void *user) { (void)s; (void)ok; *(int *)user = 1; pa_threaded_mainloop_signal(loop, 0); }

int main(int argc, char **argv) {
    readMode = argc > 1 && strcmp(argv[1], "read") == 0;
    int latencyMs = argc > 2 ? atoi(argv[2]) : 500;
    loop = pa_threaded_mainloop_new();
    pa_context *context = pa_context_new(pa_threaded_mainloop_get_api(loop), "rate-probe");
    pa_context_set_state_callback(context, state_cb, NULL);
    pa_threaded_mainloop_lock(loop);
    pa_threaded_mainloop_start(loop);
    pa_context_connect(context, NULL, PA_CONTEXT_NOAUTOSPAWN, NULL);
    while (pa_context_get_state(context) != PA_CONTEXT_READY) {
        if (!PA_CONTEXT_IS_GOOD(pa_context_get_state(context))) { fprintf(stderr, "no server\n"); return 1; }
        pa_threaded_mainloop_wait(loop);
    }
    pa_sample_spec spec = { PA_SAMPLE_FLOAT32LE, (uint32_t)oldRate, 2 };
    stream = pa_stream_new(context, "rate-probe", &spec, NULL);
    pa_stream_set_state_callback(stream, stream_state_cb, NULL);
    pa_stream_set_write_callback(stream, write_cb, NULL);
    pa_buffer_attr attr = { (uint32_t)-1, (uint32_t)(oldRate * latencyMs / 1000 * 8), (uint32_t)-1, (uint32_t)-1, (uint32_t)-1 };
    pa_stream_flags_t flags = PA_STREAM_VARIABLE_RATE | PA_STREAM_ADJUST_LATENCY | PA_STREAM_INTERPOLATE_TIMING | PA_STREAM_AUTO_TIMING_UPDATE;
    if (pa_stream_connect_playback(stream, NULL, &attr, flags, NULL, NULL) < 0) return 1;
    while (pa_stream_get_state(stream) != PA_STREAM_READY) {
        if (!PA_STREAM_IS_GOOD(pa_stream_get_state(stream))) { fprintf(stderr, "stream failed\n"); return 1; }
        pa_threaded_mainloop_wait(loop);
    }
    const pa_buffer_attr *granted = pa_stream_get_buffer_attr(stream);
    fprintf(stderr, "tlength %u bytes = %.1f ms\n", granted->tlength, granted->tlength / 8.0 / oldRate * 1000);
    pa_threaded_mainloop_unlock(loop);
    while (1) {
        usleep(2000);
        pa_threaded_mainloop_lock(loop);
        if (readMode && !switched) {
            pa_operation *op = pa_stream_update_timing_info(stream, NULL, NULL);
            if (op) pa_operation_unref(op);
            const pa_timing_info *t = pa_stream_get_timing_info(stream);
            if (t && t->read_index >= boundary * 8) {
                fprintf(stderr, "read index %lld bytes past the boundary when switching\n", (long long)(t->read_index - boundary * 8));
                update_rate();
            }
        }
        int done = finished;
        pa_threaded_mainloop_unlock(loop);
        if (done) break;
    }
    pa_threaded_mainloop_lock(loop);
    int drained = 0;
    pa_operation_unref(pa_stream_drain(stream, done_cb, &drained));
    while (!drained) pa_threaded_mainloop_wait(loop);
    pa_stream_disconnect(stream);
    pa_threaded_mainloop_unlock(loop);
    return 0;
}
