#!/usr/bin/python3
"""A music tree whose files hold several values per tag — specs/library.md §Value lists.

    multi_value_tree.py DIR [--mp4-lists]

Copies fixtures from Tests/Fixtures/audio into DIR/Multi and tags them with
mutagen (Debian's python3-mutagen) the way taggers such as MusicBrainz Picard
write lists: repeated Vorbis comments (FLAC, Ogg Vorbis, Opus), ID3v2.4 and
ID3v2.3 text frames with NUL-separated values, TXXX MusicBrainz ids, APEv2
items with NUL-separated values. Values holding ';' and '/' are single values
and must never be split. Every file and folder gets a fixed mtime, so two
servers scanning the tree see the same Last-Modified.

--mp4-lists also writes Multi/m4a_duet.m4a with two ©ART data atoms: MPD 0.23
shows only the first of them, we show both, so the differential run leaves it out.
"""
import os
import shutil
import sys

from mutagen.apev2 import APEv2
from mutagen.flac import FLAC
from mutagen.id3 import ID3, TALB, TCOM, TCON, TIT2, TPE1, TPE2, TRCK, TXXX, UFID
from mutagen.mp4 import MP4
from mutagen.oggopus import OggOpus
from mutagen.oggvorbis import OggVorbis

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "Tests", "Fixtures", "audio")
FIXED_MTIME = 1_700_000_000

BJORK_ID = "87c5dedd-371d-4a53-9f7f-80522fb7f3cb"
OLAFUR_ID = "8a8bde7e-8b5b-4d3c-9a0a-1b7a6c43d1c7"

# (fixture, name, {vorbis key: [values]}) for the Vorbis-comment files.
VORBIS = [
    ("flac_s16_stereo_44k.flac", "01 Together.flac", FLAC, {
        "TITLE": ["Together"], "ARTIST": ["Björk", "Ólafur Arnalds"], "ALBUMARTIST": ["Björk"],
        "ALBUM": ["Duets"], "TRACKNUMBER": ["1"], "DATE": ["2024"], "GENRE": ["Electronic", "Ambient"],
        "COMPOSER": ["Björk", "Ólafur Arnalds"], "PERFORMER": ["Björk (vocals)", "Ólafur Arnalds (piano)"],
        "MUSICBRAINZ_ARTISTID": [BJORK_ID, OLAFUR_ID], "MUSICBRAINZ_ALBUMARTISTID": [BJORK_ID]}),
    ("vorbis_stereo_44k.ogg", "02 Alone.ogg", OggVorbis, {
        "TITLE": ["Alone"], "ARTIST": ["Björk"], "ALBUM": ["Duets"], "TRACKNUMBER": ["2"],
        "GENRE": ["Electronic"]}),
    ("opus_stereo_48k.opus", "03 Friends.opus", OggOpus, {
        "TITLE": ["Friends"], "ARTIST": ["AC/DC", "Earth, Wind & Fire; Friends", "Björk"],
        "ALBUM": ["Duets"], "TRACKNUMBER": ["3"], "GENRE": ["Rock/Pop"]}),
]


def retag(path, kind, tags):
    """Replaces the tags of the file at `path` (a mutagen `kind`) with `tags`:
    each list becomes one key with a value per element."""
    audio = kind(path)
    audio.delete()
    audio = kind(path)
    for key, values in tags.items():
        audio[key] = values
    audio.save()


def tag_id3(path, version):
    tags = ID3()
    tags.add(TIT2(encoding=3, text=[f"ID3v2.{version}"]))
    tags.add(TPE1(encoding=3 if version == 4 else 1, text=["Björk", "Ólafur Arnalds"]))
    tags.add(TPE2(encoding=3 if version == 4 else 1, text=["Björk"]))
    tags.add(TALB(encoding=3 if version == 4 else 1, text=["Duets"]))
    tags.add(TRCK(encoding=3 if version == 4 else 1, text=[str(version)]))
    tags.add(TCOM(encoding=3 if version == 4 else 1, text=["Björk", "Ólafur Arnalds"]))
    tags.add(TCON(encoding=3 if version == 4 else 1, text=["Electronic", "Ambient"]))
    tags.add(TXXX(encoding=3 if version == 4 else 1, desc="MusicBrainz Artist Id", text=[BJORK_ID]))
    tags.add(UFID(owner="http://musicbrainz.org", data=b"0d9a8e5c-0000-4000-8000-000000000001"))
    # v23_sep=None: the values stay NUL-separated in v2.3 too (taggers that join with "/" lose the list).
    tags.save(path, v2_version=version, v23_sep=None)


def tag_ape(path):
    tags = APEv2()
    tags["Title"] = "APE"
    tags["Artist"] = "Björk\0Ólafur Arnalds"
    tags["Album"] = "Duets"
    tags["Track"] = "6"
    tags["Genre"] = "Electronic\0Ambient"
    tags.save(path)


def tag_mp4(target, tags):
    """Copies the ALAC fixture to `target` and gives it `tags` (each list
    becomes one item with a data atom per value)."""
    shutil.copyfile(os.path.join(FIXTURES, "alac_stereo_44k.m4a"), target)
    retag(target, MP4, tags)
    return target


def make(directory, mp4_lists=False):
    folder = os.path.join(directory, "Multi")
    os.makedirs(folder, exist_ok=True)
    written = []
    for fixture, name, kind, tags in VORBIS:
        target = os.path.join(folder, name)
        shutil.copyfile(os.path.join(FIXTURES, fixture), target)
        retag(target, kind, tags)
        written.append(target)
    for version in (4, 3):
        target = os.path.join(folder, f"{8 - version:02d} ID3v2.{version}.mp3")
        shutil.copyfile(os.path.join(FIXTURES, "mp3_cbr_stereo_44k.mp3"), target)
        if _has_id3(target):
            ID3(target).delete()
        tag_id3(target, version)
        written.append(target)
    target = os.path.join(folder, "06 APE.wv")
    shutil.copyfile(os.path.join(FIXTURES, "wavpack_apev2.wv"), target)
    APEv2(target).delete()
    tag_ape(target)
    written.append(target)
    written.append(tag_mp4(os.path.join(folder, "07 Single.m4a"), {
        "\xa9nam": ["Single"], "\xa9ART": ["Björk"], "\xa9alb": ["Duets"], "trkn": [(7, 0)]}))
    if mp4_lists:
        written.append(tag_mp4(os.path.join(folder, "08 Duet.m4a"), {
            "\xa9nam": ["Duet"], "\xa9ART": ["Björk", "Ólafur Arnalds"], "\xa9gen": ["Electronic", "Ambient"],
            "----:com.apple.iTunes:MusicBrainz Artist Id": [BJORK_ID.encode(), OLAFUR_ID.encode()]}))
    for path in written + [folder]:
        os.utime(path, (FIXED_MTIME, FIXED_MTIME))
    return written


def _has_id3(path):
    try:
        ID3(path)
        return True
    except Exception:
        return False


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in make(sys.argv[1], "--mp4-lists" in sys.argv[2:]):
        print(path)
