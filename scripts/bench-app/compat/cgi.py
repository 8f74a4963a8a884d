"""The two functions Django 3.2 takes from the cgi module, which Python 3.13
removed: written for this bench (scripts/bench.py puts this directory on the
path for 3.13+ only). Enough for the headers the bench's clients send."""
import re

# ; name=value, the value plain or quoted (with backslash escapes)
_PARAM = re.compile(r';\s*([^=;\s]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')


def parse_header(line):
    """'text/html; charset="utf-8"' -> ('text/html', {'charset': 'utf-8'})"""
    key, _, rest = line.partition(";")
    params = {}
    for name, value in _PARAM.findall(";" + rest):
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params[name.lower()] = value
    return key.strip(), params


def valid_boundary(s):
    """A multipart boundary: 1 to 201 printable ASCII characters, not
    ending in a space."""
    pattern = b"^[ -~]{0,200}[!-~]$" if isinstance(s, bytes) else "^[ -~]{0,200}[!-~]$"
    return re.match(pattern, s) is not None
