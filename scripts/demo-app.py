"""A small bundled workload for `make demo`: a fake request handler mixing
parsing, number crunching, sorting and string building, so the flame graph
has a few distinct towers. Runs until killed, or for argv[1] seconds."""
import json
import sys
import time


def parse_payload(text):
    return json.loads(text)


def is_prime(n):
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True


def count_primes(limit):
    return sum(1 for n in range(limit) if is_prime(n))


class Report:
    def __init__(self, rows):
        self.rows = rows

    def render(self):
        def fmt(row):
            return "|".join("%s=%s" % kv for kv in sorted(row.items()))
        return "\n".join(fmt(r) for r in self.rows)


def handle_request(i):
    payload = parse_payload(json.dumps([{"id": j, "v": j * i % 97} for j in range(300)]))
    primes = count_primes(3000 + i % 500)
    rows = sorted(payload, key=lambda r: (r["v"], -r["id"]))
    return len(Report(rows).render()) + primes


def main(seconds):
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        handle_request(i)
        i += 1


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1e9)
