package web

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// browser drives a headless Chromium over the Chrome DevTools Protocol on
// --remote-debugging-pipe (NUL-separated JSON on fds 3 and 4): no
// websocket and no dependency beyond the standard library.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser
	mu      sync.Mutex
	nextID  int
	waiting map[int]chan cdpMsg
	events  chan cdpMsg
	done    chan struct{}
	session string
	width   int // of the viewport
}

type cdpMsg struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startBrowser starts chromium with a fresh profile and opens one page;
// every event of that page goes to onEvent (from one goroutine).
func startBrowser(t *testing.T, path string, onEvent func(method string, params json.RawMessage)) *browser {
	t.Helper()
	toChrome, chromeIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	chromeOut, fromChrome, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toChrome.Close()
	fromChrome.Close()
	b := &browser{t: t, cmd: cmd, in: chromeIn, waiting: map[int]chan cdpMsg{}, events: make(chan cdpMsg, 1024), done: make(chan struct{})}
	go b.read(chromeOut)
	go func() {
		for m := range b.events {
			onEvent(m.Method, m.Params)
		}
	}()
	t.Cleanup(func() {
		_, _ = b.call("Browser.close", nil)
		chromeIn.Close()
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	var target struct{ TargetID string }
	b.must("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct{ SessionID string }
	b.must("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.session = att.SessionID
	for _, m := range []string{"Page.enable", "Runtime.enable", "Network.enable", "Log.enable"} {
		b.must(m, nil, nil)
	}
	return b
}

func (b *browser) read(r io.Reader) {
	defer close(b.done)
	defer close(b.events)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMsg
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.waiting[m.ID]
			delete(b.waiting, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		if m.SessionID == b.session && b.session != "" {
			b.events <- m
		}
	}
}

// call sends one command (to the page once attached) and waits 30 s at
// most for its answer.
func (b *browser) call(method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMsg, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if b.session != "" && method != "Browser.close" {
		msg["sessionId"] = b.session
	}
	raw, _ := json.Marshal(msg)
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-b.done:
		return nil, errors.New(method + ": browser gone")
	case <-time.After(30 * time.Second):
		return nil, errors.New(method + ": no answer in 30 s")
	}
}

func (b *browser) must(method string, params, out any) {
	b.t.Helper()
	res, err := b.call(method, params)
	if err != nil {
		b.t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			b.t.Fatalf("%s: %v", method, err)
		}
	}
}

// eval runs JavaScript in the page (awaiting a promise) and decodes its
// value into out.
func (b *browser) eval(js string, out any) error {
	res, err := b.call("Runtime.evaluate", map[string]any{"expression": js, "awaitPromise": true, "returnByValue": true})
	if err != nil {
		return err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("%s %s", r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out != nil && len(r.Result.Value) > 0 {
		return json.Unmarshal(r.Result.Value, out)
	}
	return nil
}

// waitFor polls a JavaScript condition until it is true or the deadline.
func (b *browser) waitFor(what, js string, d time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		var ok bool
		if lastErr = b.eval("!!("+js+")", &ok); lastErr == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waiting for %s: not true after %v (%v)", what, d, lastErr)
		}
		<-tick.C
	}
}

// viewport sets the page's size: a desktop or a phone.
func (b *browser) viewport(width, height int, mobile bool) {
	b.t.Helper()
	b.width = width
	b.must("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, nil)
}

// screenshot writes the whole page, as wide as the viewport, as a PNG.
func (b *browser) screenshot(path string) {
	b.t.Helper()
	var m struct {
		CSSContentSize struct{ Width, Height float64 } `json:"cssContentSize"`
	}
	b.must("Page.getLayoutMetrics", nil, &m)
	var shot struct{ Data string }
	b.must("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": min(m.CSSContentSize.Width, float64(b.width)), "height": min(m.CSSContentSize.Height, 6000), "scale": 1}}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
