// Plays 1 s of deterministic noise at 48 kHz (the sink's rate), with or
// without PA_STREAM_VARIABLE_RATE, after 0.2 s of silence: is the sink's
// monitor bit-exact? Built and run by run.sh. Usage: same_probe var|fixed
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <pulse/pulseaudio.h>
int main(int argc, char **argv) {
    int var = argc > 1 && strcmp(argv[1], "var") == 0;
    pa_mainloop *ml = pa_mainloop_new();
    pa_context *c = pa_context_new(pa_mainloop_get_api(ml), "same-probe");
    pa_context_connect(c, NULL, PA_CONTEXT_NOAUTOSPAWN, NULL);
    while (pa_context_get_state(c) != PA_CONTEXT_READY) { if (!PA_CONTEXT_IS_GOOD(pa_context_get_state(c))) return 1; pa_mainloop_iterate(ml, 1, NULL); }
    pa_sample_spec spec = { PA_SAMPLE_FLOAT32LE, 48000, 2 };
    pa_stream *s = pa_stream_new(c, "same-probe", &spec, NULL);
    pa_stream_flags_t flags = var ? PA_STREAM_VARIABLE_RATE : 0;
    pa_stream_connect_playback(s, NULL, NULL, flags, NULL, NULL);
    while (pa_stream_get_state(s) != PA_STREAM_READY) { if (!PA_STREAM_IS_GOOD(pa_stream_get_state(s))) return 1; pa_mainloop_iterate(ml, 1, NULL); }
    static float buf[2 * 57600];
    uint32_t x = 12345;
    for (int i = 9600; i < 57600; i++) { x = x * 1664525u + 1013904223u; buf[2*i] = buf[2*i+1] = ((x >> 8) / 16777216.0f - 0.5f) * 0.5f; }
    FILE *f = fopen("same-source.raw", "wb"); fwrite(buf + 2*9600, 8, 48000, f); fclose(f);
    size_t off = 0, total = sizeof buf;
    while (off < total) {
        size_t n = pa_stream_writable_size(s);
        if (n > total - off) n = total - off;
        if (n) { pa_stream_write(s, (char *)buf + off, n, NULL, 0, PA_SEEK_RELATIVE); off += n; }
        pa_mainloop_iterate(ml, 1, NULL);
    }
    pa_operation *o = pa_stream_drain(s, NULL, NULL);
    while (pa_operation_get_state(o) == PA_OPERATION_RUNNING) pa_mainloop_iterate(ml, 1, NULL);
    return 0;
}
