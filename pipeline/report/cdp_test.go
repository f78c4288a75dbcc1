package report

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// The report's tests drive headless Chromium over the DevTools protocol on a pipe
// (--remote-debugging-pipe: JSON messages ended by a NUL byte, read by the browser from its
// file descriptor 3 and written to its 4) and wait for events, not for a clock: the page's
// load event, then the ids the page's probes add when they are done. They used
// --virtual-time-budget with --dump-dom before, which hung now and then with every process
// idle until chromiumHang killed it (about 1 launch in 17 beside two busy loops; a known
// trait of virtual time, docs/report.md "Chromium hangs").

// browserJob is what one start of Chromium does with one page.
type browserJob struct {
	url           string
	width, height int      // the window (Chromium opens no window narrower than minWindow)
	exact         bool     // emulate a viewport of exactly width × height, narrower windows too
	waitFor       []string // ids of elements the page's probes add when they are done
	dom           bool     // return the DOM once they are there
	png, pdf      string   // then save a screenshot of the viewport, a PDF on A4 paper
}

// browserResult is what a job returned and what the browser's processes cost.
type browserResult struct {
	dom string
	cpu time.Duration // user and system time of the browser and the children it waited for
}

// cdpConn is one DevTools connection: commands out, answers and events in, one at a time.
type cdpConn struct {
	w       io.Writer
	r       *bufio.Reader
	next    int
	session string
	loaded  bool // Page.loadEventFired seen since the last navigation
}

type cdpMessage struct {
	ID     int             `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// errPageThrew is a script error in the page: the probes would never finish.
var errPageThrew = errors.New("the page threw")

// call sends method (to the attached page unless browser-wide) and reads until its answer,
// noting the events it passes; an exception thrown in the page ends the wait with an error.
func (c *cdpConn) call(method string, params any, browserWide bool, result any) error {
	c.next++
	msg := map[string]any{"id": c.next, "method": method, "params": params}
	if params == nil {
		msg["params"] = struct{}{}
	}
	if !browserWide {
		msg["sessionId"] = c.session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return fmt.Errorf("%s: writing to the browser: %w", method, err)
	}
	for {
		m, err := c.read()
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if m.ID == c.next {
			if m.Error != nil {
				return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
			}
			if result == nil {
				return nil
			}
			return json.Unmarshal(m.Result, result)
		}
	}
}

// read reads one message and notes the events that matter.
func (c *cdpConn) read() (cdpMessage, error) {
	line, err := c.r.ReadBytes(0)
	if err != nil {
		return cdpMessage{}, fmt.Errorf("reading from the browser: %w", err)
	}
	var m cdpMessage
	if err := json.Unmarshal(line[:len(line)-1], &m); err != nil {
		return m, fmt.Errorf("decoding the browser's message %.200q: %w", line, err)
	}
	switch m.Method {
	case "Page.loadEventFired":
		c.loaded = true
	case "Runtime.exceptionThrown":
		var e struct {
			Details json.RawMessage `json:"exceptionDetails"`
		}
		_ = json.Unmarshal(m.Params, &e)
		return m, thrown(e.Details)
	}
	return m, nil
}

// waitLoad reads until the page's load event.
func (c *cdpConn) waitLoad() error {
	for !c.loaded {
		if _, err := c.read(); err != nil {
			return fmt.Errorf("waiting for the load event: %w", err)
		}
	}
	return nil
}

// evaluate runs expr in the page, awaiting it if it is a promise, and decodes its value.
func (c *cdpConn) evaluate(expr string, value any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := c.call("Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, false, &res); err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return thrown(res.ExceptionDetails)
	}
	if value == nil {
		return nil
	}
	return json.Unmarshal(res.Result.Value, value)
}

// thrown describes a script error from its exceptionDetails: the error's description (message
// and stack) where the page threw an Error, else the text and place.
func thrown(details json.RawMessage) error {
	var d struct {
		Text      string `json:"text"`
		URL       string `json:"url"`
		Line      int    `json:"lineNumber"`
		Exception struct {
			Description string `json:"description"`
		} `json:"exception"`
	}
	if err := json.Unmarshal(details, &d); err != nil || d.Text == "" {
		return fmt.Errorf("%w: %.2000s", errPageThrew, details)
	}
	return fmt.Errorf("%w: %s %s (%s line %d)", errPageThrew, d.Text, d.Exception.Description, d.URL, d.Line+1)
}

// probesDone is a promise kept once every id in ids is an element of the page (the probes
// add them when done), then once the page has painted twice more.
func probesDone(ids []string) string {
	list, _ := json.Marshal(append([]string{}, ids...)) // [] for none, not null
	return `new Promise(function (done) {
  var ids = ` + string(list) + `;
  function there() { return ids.every(function (id) { return document.getElementById(id); }); }
  function painted() { requestAnimationFrame(function () { requestAnimationFrame(function () { done(true); }); }); }
  document.fonts.ready.then(function () {
    if (there()) return painted();
    new MutationObserver(function (_, o) { if (there()) { o.disconnect(); painted(); } }).observe(document.documentElement, {childList: true, subtree: true});
  });
})`
}

// browse starts Chromium (a fresh profile in dir, networking off), runs job and closes it.
// ctx bounds the whole: when it ends, the browser's process group is killed.
func browse(ctx context.Context, chromium, dir string, job browserJob) (browserResult, error) {
	toBrowser, browserIn, err := os.Pipe()
	if err != nil {
		return browserResult{}, err
	}
	defer browserIn.Close()
	browserOut, fromBrowser, err := os.Pipe()
	if err != nil {
		toBrowser.Close()
		return browserResult{}, err
	}
	defer browserOut.Close()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", chromiumQuietFeatures,
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--remote-debugging-pipe", "--user-data-dir=" + dir, fmt.Sprintf("--window-size=%d,%d", max(job.width, minWindow), job.height), "about:blank"}
	cmd := exec.CommandContext(ctx, chromium, args...)
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser} // its descriptors 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		toBrowser.Close()
		fromBrowser.Close()
		return browserResult{}, err
	}
	// Only the browser holds its ends now, so its exit (or kill) ends our reads and writes.
	toBrowser.Close()
	fromBrowser.Close()
	conn := &cdpConn{w: browserIn, r: bufio.NewReaderSize(browserOut, 1<<20)}
	res, jobErr := runJob(conn, job)
	if jobErr == nil {
		// A browser may close its end before it answers Browser.close: its exit status says
		// whether it closed well.
		if err := conn.call("Browser.close", nil, true, nil); err != nil && !errors.Is(err, io.EOF) {
			jobErr = err
		}
	}
	browserIn.Close()
	browserOut.Close()
	if jobErr != nil {
		_ = cmd.Cancel()
	}
	waitErr := cmd.Wait()
	if ctx.Err() != nil {
		return res, fmt.Errorf("chromium did not finish within %v (killed): %w\n%s", chromiumHang, ctx.Err(), tail(stderr.String(), 1500))
	}
	if jobErr != nil {
		return res, fmt.Errorf("chromium on %s: %w\n%s", job.url, jobErr, tail(stderr.String(), 1500))
	}
	if waitErr != nil {
		return res, fmt.Errorf("chromium on %s exited: %w\n%s", job.url, waitErr, tail(stderr.String(), 1500))
	}
	res.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return res, nil
}

// runJob attaches to the browser's page, loads job.url, waits for the probes and takes what
// job asks for.
func runJob(c *cdpConn, job browserJob) (browserResult, error) {
	var res browserResult
	if err := attachPage(c); err != nil {
		return res, err
	}
	for _, m := range []string{"Page.enable", "Runtime.enable"} {
		if err := c.call(m, nil, false, nil); err != nil {
			return res, err
		}
	}
	if job.exact {
		metrics := map[string]any{"width": job.width, "height": job.height, "deviceScaleFactor": 1, "mobile": false}
		if err := c.call("Emulation.setDeviceMetricsOverride", metrics, false, nil); err != nil {
			return res, err
		}
	}
	c.loaded = false
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := c.call("Page.navigate", map[string]any{"url": job.url}, false, &nav); err != nil {
		return res, err
	}
	if nav.ErrorText != "" {
		return res, fmt.Errorf("opening %s: %s", job.url, nav.ErrorText)
	}
	if err := c.waitLoad(); err != nil {
		return res, err
	}
	if err := c.evaluate(probesDone(job.waitFor), nil); err != nil {
		return res, fmt.Errorf("waiting for the probes %v: %w", job.waitFor, err)
	}
	if job.png != "" {
		if err := c.saveData("Page.captureScreenshot", map[string]any{"format": "png"}, job.png); err != nil {
			return res, err
		}
	}
	if job.dom {
		if err := c.evaluate("document.documentElement.outerHTML", &res.dom); err != nil {
			return res, fmt.Errorf("reading the DOM: %w", err)
		}
	}
	if job.pdf != "" {
		a4 := map[string]any{"paperWidth": 210 / 25.4, "paperHeight": 297 / 25.4, "displayHeaderFooter": false}
		if err := c.saveData("Page.printToPDF", a4, job.pdf); err != nil {
			return res, err
		}
	}
	return res, nil
}

// attachPage attaches the connection to the browser's first page (about:blank).
func attachPage(c *cdpConn) error {
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	if err := c.call("Target.getTargets", nil, true, &targets); err != nil {
		return err
	}
	for _, t := range targets.TargetInfos {
		if t.Type != "page" {
			continue
		}
		var att struct {
			SessionID string `json:"sessionId"`
		}
		if err := c.call("Target.attachToTarget", map[string]any{"targetId": t.TargetID, "flatten": true}, true, &att); err != nil {
			return err
		}
		c.session = att.SessionID
		return nil
	}
	return fmt.Errorf("the browser opened no page (targets %+v)", targets.TargetInfos)
}

// saveData calls method, which answers base64 data (a screenshot, a PDF), and writes it to path.
func (c *cdpConn) saveData(method string, params any, path string) error {
	var res struct {
		Data string `json:"data"`
	}
	if err := c.call(method, params, false, &res); err != nil {
		return err
	}
	b, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		return fmt.Errorf("%s: decoding its data: %w", method, err)
	}
	return os.WriteFile(path, b, 0o644)
}
