package procsup

import (
	"bytes"
	"io"
)

// splitLines reads r to the end and calls emit for each line, without its
// "\n" and a "\r" before it. A line longer than max is emitted as chunks of
// at most max bytes; the terminator that follows such a line yields no extra
// empty line. The only buffer is max bytes long, whatever r delivers
// (bufio.Scanner would instead fail on a long line). emit must not keep the
// slice. It returns r's error, or nil at EOF; a final unterminated line is
// emitted first.
func splitLines(r io.Reader, max int, emit func([]byte)) error {
	buf := make([]byte, max)
	start, end := 0, 0
	// chunked: the last emit was a forced chunk, so a "\n" right after it
	// ends that line rather than starting an empty one.
	chunked := false
	var rerr error
	for {
		for {
			i := bytes.IndexByte(buf[start:end], '\n')
			if i < 0 {
				break
			}
			line := buf[start : start+i]
			start += i + 1
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			if chunked && len(line) == 0 {
				chunked = false
				continue
			}
			chunked = false
			emit(line)
		}
		if start == end {
			start, end = 0, 0
		}
		if rerr != nil {
			if start < end {
				emit(buf[start:end])
			}
			if rerr == io.EOF {
				return nil
			}
			return rerr
		}
		if end-start == len(buf) {
			n := len(buf)
			// Hold a trailing "\r" back: if "\n" follows, the pair is the
			// terminator and must not leak into the chunk.
			if n > 1 && buf[end-1] == '\r' {
				n--
			}
			emit(buf[start : start+n])
			chunked = true
			start += n
		}
		if end == len(buf) {
			end = copy(buf, buf[start:end])
			start = 0
		}
		var n int
		n, rerr = r.Read(buf[end:])
		end += n
	}
}
