#!/usr/bin/env python3
"""The commented config file, /etc/harmonia-play.conf, from serve's own
parser: `config_template.py HARMONIA_PLAY` runs `HARMONIA_PLAY serve
--experimental-dump-help` (swift-argument-parser's description of every
option: name, flag or option, value name, default, help, group) and prints
every setting serve takes, commented out, with its help and default.
The names a config file may use are the same list (Sources/harmonia-play/
ServeConfigFile.swift reads it from the same parser), so the two cannot drift.
"""
import json
import subprocess
import sys
import textwrap

# Options that are not settings (ServeOptionTable.notSettings).
NOT_SETTINGS = {'config', 'help', 'version', 'experimental-dump-help', 'generate-completion-script'}

HEADER = """\
# harmonia-play serve's config file (man harmonia-play-serve).
#
# The system service (harmonia-play.service) reads /etc/harmonia-play.conf;
# your own service (systemctl --user) and `harmonia-play serve` read
# ~/.config/harmonia-play/harmonia-play.conf when it exists.
#
# One setting a line: 'option = value', the option being serve's long option
# without '--'. A flag is 'option' alone, 'option = yes' or 'option = no'.
# A value may be quoted ("..." or '...'); lines starting with '#' are
# comments. Options on the command line override this file. An unknown
# option or a bad value stops serve with an error naming FILE:LINE.
# Every setting below is commented out, showing its default when it has one.
#
# For the system service, ~ is /var/lib/harmonia-play and $XDG_DATA_HOME and
# $XDG_STATE_HOME are /var/lib: set music-dir to your music folder.
#
# A password or a token in this file: make it readable by its owner alone
# (chmod 600). The system service gets the file as a credential
# (LoadCredential=), so /etc/harmonia-play.conf can stay root's.
"""


def comment(text: str) -> list[str]:
    return textwrap.wrap(text, width=76, initial_indent='# ', subsequent_indent='# ',
                         break_long_words=False, break_on_hyphens=False)


def main() -> None:
    dump = subprocess.run([sys.argv[1], 'serve', '--experimental-dump-help'],
                          check=True, capture_output=True, text=True).stdout
    arguments = json.loads(dump)['command']['arguments']
    lines = HEADER.splitlines()
    section = None
    for argument in arguments:
        if argument['kind'] not in ('option', 'flag'):
            continue
        names = [n['name'] for n in argument.get('names', []) if n['kind'] == 'long']
        if not names or names[0] in NOT_SETTINGS:
            continue
        name = names[0]
        title = argument.get('sectionTitle') or 'Server'
        if title != section:
            section = title
            lines += ['', '## ' + title]
        lines.append('')
        help_text = argument.get('abstract', '')
        if argument.get('isRepeating'):
            help_text += ' (One line each; repeatable.)'
        lines += comment(help_text)
        if argument['kind'] == 'flag':
            lines.append(f'#{name} = no')
        else:
            lines.append(f"#{name} = {argument.get('defaultValue') or argument.get('valueName', 'VALUE')}")
    print('\n'.join(lines))


if __name__ == '__main__':
    main()
