package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// stream carries newline-delimited JSON-RPC messages over a reader and a
// writer: a stdio server's stdout and stdin, or pipes in tests.
type stream struct {
	r io.Reader
	w io.WriteCloser

	out      chan []byte   // to the writer goroutine
	quit     chan struct{} // closed by shut
	ended    chan struct{} // closed when reading or writing failed
	endErr   error
	endOnce  sync.Once
	shutOnce sync.Once
	wg       sync.WaitGroup // the reader and the writer
}

var _ transport = (*stream)(nil)

func newStream(r io.Reader, w io.WriteCloser) *stream {
	return &stream{r: r, w: w, out: make(chan []byte), quit: make(chan struct{}), ended: make(chan struct{})}
}

// start runs the reader, which passes each line to handle, and the
// writer.
func (t *stream) start(handle func([]byte) bool) {
	t.wg.Add(2)
	go t.read(handle)
	go t.write()
}

func (t *stream) read(handle func([]byte) bool) {
	defer t.wg.Done()
	br := bufio.NewReaderSize(t.r, 64<<10)
	for {
		line, err := readLine(br, maxMessage)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the server closed its output")
			}
			t.end(err)
			return
		}
		// A line that is not JSON, such as a banner a server prints on
		// stdout by mistake, is dropped by handle.
		if len(bytes.TrimSpace(line)) > 0 {
			handle(line)
		}
	}
}

// readLine reads up to a newline, refusing a line longer than limit.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > limit+1 {
			return nil, errTooLarge
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err // a last line without its newline is dropped
		}
	}
}

func (t *stream) write() {
	defer t.wg.Done()
	for {
		select {
		case msg := <-t.out:
			if _, err := t.w.Write(msg); err != nil {
				t.end(fmt.Errorf("write to the server: %w", err))
				return
			}
		case <-t.quit:
			return
		case <-t.ended:
			return
		}
	}
}

func (t *stream) end(err error) {
	t.endOnce.Do(func() {
		t.endErr = err
		close(t.ended)
	})
}

func (t *stream) send(ctx context.Context, msg []byte, _ bool) error {
	line := append(msg[:len(msg):len(msg)], '\n')
	select {
	case t.out <- line:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.quit:
		return errClosed
	case <-t.ended:
		return t.endErr
	}
}

func (t *stream) ready(string)          {}
func (t *stream) done() <-chan struct{} { return t.ended }
func (t *stream) err() error            { return t.endErr }

// shut stops writing and closes the writer: the server sees its input end.
func (t *stream) shut() {
	t.shutOnce.Do(func() {
		close(t.quit)
		_ = t.w.Close()
	})
}

// close shuts the stream, closes the reader when it can be closed, and
// waits for both goroutines.
func (t *stream) close() error {
	t.shut()
	if c, ok := t.r.(io.Closer); ok {
		_ = c.Close()
	}
	t.wg.Wait()
	t.end(errClosed)
	return nil
}

// terminateWait is how long closing a stdio server waits for it to exit
// after closing its stdin, and again after SIGTERM, before SIGKILL.
const terminateWait = 2 * time.Second

// exitGrace is how long a stdio connection whose output ended waits for
// the process's exit status, to say why it ended.
const exitGrace = time.Second

// stdio is a server run as a child process, spoken to on its stdin and
// stdout.
type stdio struct {
	lines  *stream
	cmd    *exec.Cmd
	stdout *os.File // the read end

	exited  chan struct{} // closed when the process has been reaped
	exitErr error

	ended     chan struct{} // closed when the connection has ended
	endErr    error
	monitor   sync.WaitGroup
	closeOnce sync.Once
	terminate time.Duration // terminateWait, shorter in tests
}

var _ transport = (*stdio)(nil)

// startStdio starts the command of cfg in its own process group.
func startStdio(cfg Server, stderr io.Writer) (*stdio, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = cfg.Env
	cmd.Stderr = stderr
	// Its own process group, so that a server's children do not get the
	// terminal's signals and die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A grandchild holding stderr open must not keep Wait from returning.
	cmd.WaitDelay = terminateWait
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	// stdout is a pipe of ours rather than StdoutPipe's, whose read end
	// Wait closes: here the reader sees every byte before its end.
	pr, pw, err := os.Pipe()
	if err != nil {
		_ = stdin.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	cmd.Stdout = pw
	err = cmd.Start()
	_ = pw.Close()
	if err != nil {
		_ = pr.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	t := &stdio{lines: newStream(pr, stdin), cmd: cmd, stdout: pr, exited: make(chan struct{}), ended: make(chan struct{}), terminate: terminateWait}
	go func() {
		t.exitErr = cmd.Wait()
		close(t.exited)
		// A grandchild may hold stdout open: the reader stops here.
		_ = pr.Close()
	}()
	return t, nil
}

// start runs the stream, and notes the end of the connection once the
// output ended, with the exit status when the process is gone too.
func (t *stdio) start(handle func([]byte) bool) {
	t.lines.start(handle)
	t.monitor.Add(1)
	go func() {
		defer t.monitor.Done()
		<-t.lines.done()
		timer := time.NewTimer(exitGrace)
		defer timer.Stop()
		select {
		case <-t.exited:
			if t.exitErr != nil {
				t.endErr = fmt.Errorf("the server exited: %w", t.exitErr)
			} else {
				t.endErr = errors.New("the server exited")
			}
		case <-timer.C:
			t.endErr = t.lines.err()
		}
		close(t.ended)
	}()
}

func (t *stdio) send(ctx context.Context, msg []byte, call bool) error {
	return t.lines.send(ctx, msg, call)
}

func (t *stdio) ready(string)          {}
func (t *stdio) done() <-chan struct{} { return t.ended }
func (t *stdio) err() error            { return t.endErr }

// close closes the server's stdin and waits for it to exit; then SIGTERM,
// then SIGKILL. The process is always reaped.
func (t *stdio) close() error {
	t.closeOnce.Do(func() {
		t.lines.shut()
		if !t.waitExit(t.terminate) {
			_ = t.cmd.Process.Signal(syscall.SIGTERM)
			if !t.waitExit(t.terminate) {
				_ = t.cmd.Process.Kill()
				<-t.exited
			}
		}
		t.lines.wg.Wait() // the reader ends: stdout is closed once reaped
		t.monitor.Wait()
	})
	return nil
}

func (t *stdio) waitExit(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-t.exited:
		return true
	case <-timer.C:
		return false
	}
}
