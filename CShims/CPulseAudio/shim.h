// CPulseAudio: libpulse for Swift.
// Re-exports libpulse's asynchronous API, and the stream-restore extension
// (the volume a session manager gives a new stream). Nothing here but
// includes so far: every libpulse call Swift needs is an ordinary C function.
#ifndef HARMONIA_CPULSEAUDIO_SHIM_H
#define HARMONIA_CPULSEAUDIO_SHIM_H

#include <pulse/pulseaudio.h>
#include <pulse/ext-stream-restore.h>

#endif
