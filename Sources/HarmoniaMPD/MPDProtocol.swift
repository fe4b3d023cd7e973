// MPD protocol, 0.23 dialect — specs/mpd-protocol.md
import HarmoniaLibrary
