#!/usr/bin/env python3
"""The manual pages swift-argument-parser's generate-manual writes, made
installable: `manpages.py GENERATED_DIR OUT_DIR`.

- Names: harmonia-play.serve.1 becomes harmonia-play-serve.1 (and its .Dt,
  its NAME line, which whatis reads, and every .Xr to it), as git names its
  pages, while its synopsis still says `harmonia-play serve`; the `help`
  subcommand's page is left out (it is not a command of ours).
- Text: the generator copies each command's discussion as it is, which groff
  reads as requests where it should read text: an empty line (mdoc warns
  "Empty input line"), a line starting with '.' or "'" (a macro call), a
  backslash (an escape). Empty lines become .Pp, such lines are escaped, and a
  run of lines indented by two spaces (examples, key lists) becomes a literal
  display, so it keeps its lines. A synopsis value name like
  pulse|null|file:PATH|snapcast://HOST may break after each '|' (groff warns
  "can't break line" when one does not fit).

`man --warnings` on the result prints nothing (make test-install checks).
"""
import pathlib
import re
import sys

# The mdoc macros the generator writes; any other line starting with '.' is text.
GENERATED = re.compile(r'^\.(\\"|Dd|Dt|Os|Sh|Ss|Nm|Nd|Op|Fl|Ar|Bl|El|It|Pp|Xr|Ex|An|Aq|Bd|Ed|Pa|Ql|Dl|Sx|Em|No|Ns|Oo|Oc|Sy|Lk|Mt)( |$)')


def page_name(generated: str) -> str:
    """harmonia-play.listens.submit -> harmonia-play-listens-submit."""
    return generated.replace('.', '-')


def text_line(line: str) -> str:
    """A line of the discussion as groff text: backslashes and a leading '.' or "'" escaped."""
    line = line.replace('\\', '\\e')
    return '\\&' + line if line[:1] in ('.', "'") else line


def fix(lines: list[str]) -> list[str]:
    out: list[str] = []
    literal = False
    command = None  # "harmonia-play serve": the page is harmonia-play-serve, the synopsis says the command
    for line in lines:
        name = re.match(r'^\.Nm "(.+ .+)"$', line)
        if name and command is None:
            command = name.group(1)
            line = '.Nm ' + command.replace(' ', '-')  # whatis (and lintian) read NAME as the page's name
        elif line == '.Nm' and command:
            line = f'.Nm "{command}"'
        line = re.sub(r'^(\.Dt )(\S+)', lambda m: m.group(1) + m.group(2).replace('.', '-'), line)
        line = re.sub(r'^(\.Xr )(\S+)', lambda m: m.group(1) + page_name(m.group(2)), line)
        if line.startswith('.Op ') and ' Ar ' in line:
            line = line.replace('|', '|\\:')  # a long value name (a|b|c) may break after each '|'
        is_macro = bool(GENERATED.match(line))
        indented = line.startswith('  ') and not is_macro
        if literal and not indented:
            out.append('.Ed')
            literal = False
        if is_macro:
            out.append(line)
        elif indented:
            if not literal:
                out.append('.Bd -literal -offset indent')
                literal = True
            out.append(text_line(line[2:]))
        elif line.strip() == '':
            if out and out[-1] != '.Pp':
                out.append('.Pp')
        else:
            out.append(text_line(line))
    if literal:
        out.append('.Ed')
    # No paragraph break right before a list or a section: groff warns of neither, mandoc of both.
    return [line for i, line in enumerate(out)
            if not (line == '.Pp' and i + 1 < len(out) and out[i + 1].startswith(('.Bl', '.Sh', '.Bd')))]


def main() -> None:
    source, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    target.mkdir(parents=True, exist_ok=True)
    for page in sorted(source.glob('*.1')):
        name = page.name[:-2]
        if name.endswith('.help'):
            continue
        lines = page.read_text(encoding='utf-8').splitlines()
        lines = [line for line in lines if not re.match(r'^\.Xr \S+\.help 1', line)]
        # The last reference of a list takes no comma.
        lines = [line[:-2] if line.startswith('.Xr ') and line.endswith(' ,')
                 and (i + 1 == len(lines) or not lines[i + 1].startswith('.Xr ')) else line
                 for i, line in enumerate(lines)]
        (target / (page_name(name) + '.1')).write_text('\n'.join(fix(lines)) + '\n', encoding='utf-8')


if __name__ == '__main__':
    main()
