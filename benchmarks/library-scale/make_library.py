#!/usr/bin/python3
"""A generated music library of N tagged files, for the library-scale benchmark and tests.

`make_library.py FOLDER [--songs N] [--big-folder M] [--seed S]` writes, in
FOLDER, N files (default 100,000): FLAC and MP3 by album, in album folders
`AlbumArtist/Year - Album/NN Title.ext` of 6 to 14 tracks (about 9,500 folders
and 4,100 album artists at 100,000), and one folder `Singles` of M files
(default 5,000; scaled down with N). Tags: Title, Artist, AlbumArtist, Album,
Track, Disc, Genre (40 values), Date; 1 song in 20 has two Artist values, 1
album in 25 no AlbumArtist (a compilation whose tracks have their own
artists), some names non-ASCII or differing only in case. Deterministic for a
seed. Every file's modification time is FIXED_MTIME, every folder's too.

Fast: two silent seed files (0.2 s, no tags) are encoded once with the
ffmpeg command line; each file is then that seed's audio behind a tag block
written here (FLAC: STREAMINFO then a VORBIS_COMMENT block; MP3: an ID3v2.4
tag of UTF-8 text frames, several values NUL-separated), in worker
processes (all cores). A sample of files is read back with mutagen (the
tagger library) to check the tags. A stamp file (FOLDER/.generated) holds
the parameters: an existing library made with the same ones is reused.

Prints a JSON summary (songs, album folders, album artists) on stdout.
"""
import argparse, json, os, random, shutil, struct, subprocess, sys
from concurrent.futures import ProcessPoolExecutor

FIXED_MTIME = 1_700_000_000
GENRES = ["Rock", "Pop", "Jazz", "Blues", "Classical", "Electronic", "Hip-Hop", "Folk", "Metal", "Punk",
          "Reggae", "Soul", "Funk", "Country", "Ambient", "Techno", "House", "Trance", "Disco", "Gospel",
          "Latin", "Ska", "Grunge", "Indie", "Opera", "Swing", "Bossa Nova", "Samba", "Tango", "Fado",
          "Chanson", "Schlager", "K-Pop", "J-Pop", "Afrobeat", "Dub", "Drum & Bass", "Trip-Hop", "Krautrock",
          "Noise"]
SYLLABLES = ["ka", "lo", "mi", "ra", "ne", "to", "vu", "shi", "an", "el", "or", "ix", "da", "be", "qu", "zo",
             "fa", "ri", "mo", "su", "ké", "lø", "ñu", "ßa"]
WORDS = ["Night", "Day", "Blue", "Red", "River", "Stone", "Light", "Dream", "Fire", "Rain", "Road", "Heart",
         "Song", "Echo", "Wave", "Star", "Ghost", "Glass", "Storm", "Silver", "Golden", "Winter", "Summer",
         "Ocean", "Shadow", "Mirror", "Garden", "City", "Desert", "Moon", "Sun", "Wolf", "Raven", "Tide"]


def artist_name(rng, i):
    name = " ".join("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
                    for _ in range(rng.randint(1, 2)))
    return f"{name} {i}" if i % 7 == 0 else name  # some names repeat: numbered to stay distinct folders


def title(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))


def plan(songs, big_folder, seed):
    """[(relative path, kind, tags: [(key, value)])] for the whole library."""
    rng = random.Random(seed)
    big = min(big_folder, songs // 4)
    rest = songs - big
    files = []
    artists = []
    album_index = 0
    while rest > 0:
        # A new album artist every 2 to 3 albums (about 2.3 albums each).
        if not artists or rng.random() < 0.43:
            a = artist_name(rng, len(artists))
            if rng.random() < 0.02:
                a = a.upper()  # the same name in another case: a distinct value for MPD
            artists.append(a)
        album_artist = artists[-1]
        tracks = min(rest, rng.randint(6, 14))
        rest -= tracks
        album_index += 1
        album = f"{title(rng)} {album_index}"
        year = str(rng.randint(1960, 2024))
        genre = rng.choice(GENRES)
        kind = "flac" if album_index % 2 else "mp3"
        compilation = album_index % 25 == 0
        folder = f"{'Various Artists' if compilation else album_artist}/{year} - {album}"
        for t in range(1, tracks + 1):
            name = title(rng)
            tags = [("TITLE", name)]
            if compilation:
                tags.append(("ARTIST", rng.choice(artists)))
            else:
                tags.append(("ARTIST", album_artist))
                if rng.random() < 0.05:
                    tags.append(("ARTIST", rng.choice(artists)))
                tags.append(("ALBUMARTIST", album_artist))
            tags += [("ALBUM", album), ("TRACKNUMBER", str(t)), ("DISCNUMBER", "1"), ("GENRE", genre),
                     ("DATE", year)]
            files.append((f"{folder}/{t:02d} {name}.{kind}", kind, tags))
    for i in range(big):
        kind = "mp3" if i % 2 else "flac"
        a = rng.choice(artists)
        tags = [("TITLE", title(rng)), ("ARTIST", a), ("GENRE", rng.choice(GENRES)), ("DATE", str(rng.randint(1960, 2024)))]
        files.append((f"Singles/{i:05d} {a}.{kind}", kind, tags))
    return files


# MARK: - Tag blocks

def flac_file(seed_streaminfo, seed_audio, tags):
    vendor = b"harmonia-bench"
    comments = [f"{k}={v}".encode() for k, v in tags]
    body = struct.pack("<I", len(vendor)) + vendor + struct.pack("<I", len(comments))
    for c in comments:
        body += struct.pack("<I", len(c)) + c
    # STREAMINFO (type 0, not last), VORBIS_COMMENT (type 4, last).
    return (b"fLaC" + bytes([0]) + len(seed_streaminfo).to_bytes(3, "big") + seed_streaminfo
            + bytes([0x84]) + len(body).to_bytes(3, "big") + body + seed_audio)


ID3_FRAMES = {"TITLE": "TIT2", "ARTIST": "TPE1", "ALBUMARTIST": "TPE2", "ALBUM": "TALB", "TRACKNUMBER": "TRCK",
              "DISCNUMBER": "TPOS", "GENRE": "TCON", "DATE": "TDRC"}


def syncsafe(n):
    return bytes([(n >> 21) & 0x7F, (n >> 14) & 0x7F, (n >> 7) & 0x7F, n & 0x7F])


def mp3_file(seed_audio, tags):
    values = {}
    for k, v in tags:
        values.setdefault(ID3_FRAMES[k], []).append(v)
    frames = b""
    for frame, vs in values.items():
        data = b"\x03" + "\x00".join(vs).encode()  # UTF-8; several values NUL-separated (ID3v2.4)
        frames += frame.encode() + syncsafe(len(data)) + b"\x00\x00" + data
    return b"ID3\x04\x00\x00" + syncsafe(len(frames)) + frames + seed_audio


def seeds(folder):
    """(FLAC STREAMINFO, FLAC audio frames, MP3 audio) of two silent 0.2 s seeds made with ffmpeg."""
    out = {}
    for kind, codec in (("flac", ["-c:a", "flac"]), ("mp3", ["-c:a", "libmp3lame", "-b:a", "64k"])):
        path = os.path.join(folder, "seed." + kind)
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
                        "-i", "anullsrc=r=44100:cl=stereo", "-t", "0.2", "-map_metadata", "-1",
                        *codec, *(["-id3v2_version", "0", "-write_id3v1", "0"] if kind == "mp3" else []),
                        "-fflags", "+bitexact", path], check=True, timeout=60)
        out[kind] = open(path, "rb").read()
    flac = out["flac"]
    assert flac[:4] == b"fLaC"
    pos, streaminfo = 4, None
    while True:
        header = flac[pos]
        size = int.from_bytes(flac[pos + 1:pos + 4], "big")
        if header & 0x7F == 0:
            streaminfo = flac[pos + 4:pos + 4 + size]
        pos += 4 + size
        if header & 0x80:
            break
    return streaminfo, flac[pos:], out["mp3"]


def write_part(args):
    root, part, seed_data = args
    streaminfo, flac_audio, mp3_audio = seed_data
    made = set()
    for path, kind, tags in part:
        full = os.path.join(root, path)
        d = os.path.dirname(full)
        if d not in made:
            os.makedirs(d, exist_ok=True)
            made.add(d)
        data = flac_file(streaminfo, flac_audio, tags) if kind == "flac" else mp3_file(mp3_audio, tags)
        with open(full, "wb") as f:
            f.write(data)
        os.utime(full, (FIXED_MTIME, FIXED_MTIME))
    return len(part)


def check_sample(root, files):
    import mutagen
    for path, kind, tags in files[:: max(1, len(files) // 50)]:
        f = mutagen.File(os.path.join(root, path), easy=True)
        want = {}
        for k, v in tags:
            want.setdefault({"TRACKNUMBER": "tracknumber", "DISCNUMBER": "discnumber"}.get(k, k.lower()), []).append(v)
        for key, values in want.items():
            if f.get(key) != values:
                raise SystemExit(f"make_library: {path}: {key} reads back {f.get(key)!r}, wrote {values!r}")


def make_library(folder, songs=100_000, big_folder=5_000, seed=1):
    """Writes (or reuses) the library; returns its summary."""
    params = {"songs": songs, "big_folder": big_folder, "seed": seed, "version": 2}
    stamp = os.path.join(folder, ".generated")
    files = plan(songs, big_folder, seed)
    summary = {"songs": len(files),
               "album_folders": len({os.path.dirname(p) for p, _, _ in files if not p.startswith("Singles/")}),
               "album_artists": len({v for _, _, t in files for k, v in t if k == "ALBUMARTIST"}),
               "big_folder": sum(1 for p, _, _ in files if p.startswith("Singles/"))}
    try:
        if json.load(open(stamp)) == params:
            return summary
    except (OSError, ValueError):
        pass
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    seed_dir = folder + ".seeds"
    os.makedirs(seed_dir, exist_ok=True)
    seed_data = seeds(seed_dir)
    shutil.rmtree(seed_dir, ignore_errors=True)
    workers = os.cpu_count() or 1
    parts = [(folder, files[i::workers * 4], seed_data) for i in range(workers * 4)]
    # Split by album folder would be tidier; any split writes the same files.
    with ProcessPoolExecutor(workers) as pool:
        written = sum(pool.map(write_part, parts))
    assert written == len(files)
    check_sample(folder, files)
    for dirpath, dirs, _ in os.walk(folder):
        for d in dirs:
            os.utime(os.path.join(dirpath, d), (FIXED_MTIME, FIXED_MTIME))
    os.utime(folder, (FIXED_MTIME, FIXED_MTIME))
    with open(stamp, "w") as f:
        json.dump(params, f)
    os.utime(folder, (FIXED_MTIME, FIXED_MTIME))
    return summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--songs", type=int, default=100_000)
    ap.add_argument("--big-folder", type=int, default=5_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.songs < 1 or a.songs > 10_000_000 or a.big_folder < 0:
        raise SystemExit("make_library: --songs must be 1 to 10,000,000, --big-folder 0 or more")
    print(json.dumps(make_library(os.path.abspath(a.folder), a.songs, a.big_folder, a.seed)))


if __name__ == "__main__":
    main()
