"""A program under a pseudo-terminal of a set size, and a small terminal emulator that keeps its
screen as rows of text: enough of xterm for what ncurses sends with TERM=xterm (cursor
addressing and moves, erasing, inserting and deleting characters and lines, scrolling regions,
repeats, the alternate screen), so a test reads what a person would see. Standard library only.

    with PtyProgram([...], rows=24, cols=80, env=env) as p:
        p.wait_for(lambda s: "PROCESSES" in s.text(), 10, "the first frame")
        p.send(b"?")
        p.resize(60, 200)   # TIOCSWINSZ and SIGWINCH
"""
import codecs
import fcntl
import os
import select
import signal
import struct
import subprocess
import termios
import time

import gvtest


class Screen:
    def __init__(self, rows, cols):
        self.rows, self.cols = rows, cols
        self.grid = [[" "] * cols for _ in range(rows)]
        self.y = self.x = 0
        self.wrap = False  # the cursor sits past the last column: the next character wraps
        self.top, self.bottom = 0, rows - 1
        self.saved = (0, 0)
        self.last = " "
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.state = None  # None, "esc", "csi", "osc", "charset"
        self.seq = ""

    # ---- the screen as text
    def lines(self):
        return ["".join(r).rstrip() for r in self.grid]

    def text(self):
        return "\n".join(self.lines())

    # ---- editing
    def resize(self, rows, cols):
        self.grid = [(r + [" "] * cols)[:cols] for r in self.grid[:rows]] + [[" "] * cols for _ in range(rows - len(self.grid))]
        self.rows, self.cols = rows, cols
        self.top, self.bottom = 0, rows - 1
        self.y, self.x = min(self.y, rows - 1), min(self.x, cols - 1)

    def blank(self):
        return [" "] * self.cols

    def scroll_up(self, n=1, top=None):
        top = self.top if top is None else top
        for _ in range(n):
            del self.grid[top]
            self.grid.insert(self.bottom, self.blank())

    def scroll_down(self, n=1, top=None):
        top = self.top if top is None else top
        for _ in range(n):
            del self.grid[self.bottom]
            self.grid.insert(top, self.blank())

    def index(self):
        if self.y == self.bottom:
            self.scroll_up()
        elif self.y < self.rows - 1:
            self.y += 1

    def put(self, ch):
        if self.wrap:
            self.x, self.wrap = 0, False
            self.index()
        self.grid[self.y][self.x] = ch
        self.last = ch
        if self.x == self.cols - 1:
            self.wrap = True
        else:
            self.x += 1

    def move(self, y, x):
        self.y = max(0, min(self.rows - 1, y))
        self.x = max(0, min(self.cols - 1, x))
        self.wrap = False

    def erase_line(self, mode):
        row = self.grid[self.y]
        a, b = {0: (self.x, self.cols), 1: (0, self.x + 1), 2: (0, self.cols)}.get(mode, (0, 0))
        for i in range(a, b):
            row[i] = " "

    def erase_display(self, mode):
        if mode in (2, 3):
            self.grid = [self.blank() for _ in range(self.rows)]
            return
        self.erase_line(mode)
        rng = range(self.y + 1, self.rows) if mode == 0 else range(0, self.y)
        for y in rng:
            self.grid[y] = self.blank()

    # ---- input
    def feed(self, data):
        for ch in self.decoder.decode(data):
            self.char(ch)

    def char(self, ch):
        st = self.state
        if st == "esc":
            self.state = None
            if ch == "[":
                self.state, self.seq = "csi", ""
            elif ch == "]":
                self.state, self.seq = "osc", ""
            elif ch in "()*+":
                self.state = "charset"
            elif ch == "7":
                self.saved = (self.y, self.x)
            elif ch == "8":
                self.move(*self.saved)
            elif ch == "M":
                if self.y == self.top:
                    self.scroll_down()
                elif self.y > 0:
                    self.y -= 1
            elif ch == "D":
                self.index()
            elif ch == "E":
                self.x = 0
                self.index()
            elif ch == "c":
                self.__init__(self.rows, self.cols)
            return
        if st == "charset":
            self.state = None
            return
        if st == "osc":
            if ch == "\x07" or (ch == "\\" and self.seq.endswith("\x1b")):
                self.state = None
            else:
                self.seq += ch
            return
        if st == "csi":
            if "\x40" <= ch <= "\x7e":
                self.state = None
                self.csi(self.seq, ch)
            else:
                self.seq += ch
            return
        if ch == "\x1b":
            self.state = "esc"
        elif ch == "\r":
            self.x, self.wrap = 0, False
        elif ch in "\n\x0b\x0c":
            self.wrap = False
            self.index()
        elif ch == "\b":
            self.move(self.y, self.x - 1)
        elif ch == "\t":
            self.move(self.y, (self.x // 8 + 1) * 8)
        elif ch >= " " and ch != "\x7f":
            self.put(ch)

    def csi(self, seq, final):
        private = seq[:1] in ("?", ">", "=", "!")
        body = seq[1:] if private else seq
        try:
            params = [int(p) if p else 0 for p in body.split(";")] if body else []
        except ValueError:
            return
        def p(i, default=1):
            v = params[i] if i < len(params) else 0
            return v if v else default
        if private:
            if final == "h" and 1049 in params:
                self.saved = (self.y, self.x)
                self.erase_display(2)
            return
        if final in "Hf":
            self.move(p(0) - 1, p(1) - 1)
        elif final == "A":
            self.move(self.y - p(0), self.x)
        elif final == "B":
            self.move(self.y + p(0), self.x)
        elif final == "C":
            self.move(self.y, self.x + p(0))
        elif final == "D":
            self.move(self.y, self.x - p(0))
        elif final in "G`":
            self.move(self.y, p(0) - 1)
        elif final == "d":
            self.move(p(0) - 1, self.x)
        elif final == "K":
            self.erase_line(p(0, 0))
        elif final == "J":
            self.erase_display(p(0, 0))
        elif final == "X":
            for i in range(self.x, min(self.cols, self.x + p(0))):
                self.grid[self.y][i] = " "
        elif final == "@":
            row = self.grid[self.y]
            n = p(0)
            self.grid[self.y] = (row[:self.x] + [" "] * n + row[self.x:])[:self.cols]
        elif final == "P":
            row = self.grid[self.y]
            n = p(0)
            self.grid[self.y] = row[:self.x] + row[self.x + n:] + [" "] * min(n, self.cols - self.x)
        elif final == "L":
            if self.top <= self.y <= self.bottom:
                self.scroll_down(p(0), top=self.y)
        elif final == "M":
            if self.top <= self.y <= self.bottom:
                self.scroll_up(p(0), top=self.y)
        elif final == "S":
            self.scroll_up(p(0))
        elif final == "T":
            self.scroll_down(p(0))
        elif final == "r":
            self.top, self.bottom = p(0) - 1, p(1, self.rows) - 1
            self.move(0, 0)
        elif final == "b":
            for _ in range(p(0)):
                self.put(self.last)
        # m (colours), h and l (modes), t (window), n and the rest: nothing on the screen


class PtyProgram:
    def __init__(self, argv, rows, cols, env):
        self.screen = Screen(rows, cols)
        self.master, slave = os.openpty()
        self._winsize(slave, rows, cols)
        env = dict(env)
        env.pop("LINES", None)  # ncurses would take these over the terminal's own size
        env.pop("COLUMNS", None)
        self.p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
                                  close_fds=True)
        os.close(slave)
        self.output = b""

    def _winsize(self, fd, rows, cols):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def pump(self, seconds):
        """Reads what the program writes for up to seconds, into the screen."""
        end = time.time() + seconds
        while True:
            left = end - time.time()
            r, _, _ = select.select([self.master], [], [], max(0, left))
            if r:
                try:
                    data = os.read(self.master, 65536)
                except OSError:  # EIO: the program closed the terminal
                    data = b""
                if not data:
                    return False
                self.output += data
                self.screen.feed(data)
            elif left <= 0:
                return True

    def wait_for(self, cond, timeout, what):
        end = time.time() + timeout
        while time.time() < end:
            if cond(self.screen):
                return
            if not self.pump(0.05) and not cond(self.screen):
                break
        if cond(self.screen):
            return
        raise gvtest.Fail("timed out waiting for %s; the screen:\n%s" % (what, self.screen.text()))

    def settle(self, seconds=0.3):
        self.pump(seconds)

    def send(self, data):
        os.write(self.master, data)

    def resize(self, rows, cols):
        self._winsize(self.master, rows, cols)
        self.screen.resize(rows, cols)
        # no controlling terminal (a new session that opened none): the signal by hand
        self.p.send_signal(signal.SIGWINCH)

    def close(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        try:
            os.close(self.master)
        except OSError:
            pass
