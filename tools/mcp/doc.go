// Package mcp turns Model Context Protocol servers into session tools.
//
// [Connect] starts the servers it is given (stdio: a command with its
// arguments and environment, run in a process group of its own; HTTP: a
// URL with headers, spoken to over the streamable HTTP transport), lists
// their tools and returns a [Set] whose [Set.Tools] are [session.Tool]s a
// session or any other Go program calls like its own:
//
//	set, err := mcp.Connect(ctx, []mcp.Server{
//		{Name: "files", Command: "mcp-files", Args: []string{"--root", "/project"}},
//		{Name: "issues", URL: "https://issues.example/mcp", Headers: http.Header{"Authorization": {"Bearer " + token}}},
//	})
//	if err != nil {
//		return err // the list itself is wrong (mcp.ErrConfig): nothing was started
//	}
//	defer set.Close()
//	for _, f := range set.Failed() {
//		log.Printf("not available: %v", f) // which server, why, and the end of its stderr
//	}
//	s, err := session.New(ctx, session.Config{Provider: p, Tools: set.Tools()})
//
// A tool is named mcp__<server>__<tool>, cut to what the providers accept
// (^[a-zA-Z0-9_-]{1,64}$): other characters become '_', and a name that is
// too long or that two tools would share ends in a hash of the server's and
// the tool's own names instead, so that names stay unique and the same from
// one run to the next. Its Parameters are the server's input schema.
//
// A call's result is text: the text content of the result joined by
// newlines, every other kind of content named in brackets ("[image
// image/png, 1234 bytes]"), an embedded text resource included under its
// URI; a result the server marks isError is the tool's error. Output is cut
// at [Options.MaxOutput] with a note saying so. Cancelling the ctx of a
// call ends it: the server is sent notifications/cancelled.
//
// Servers are untrusted: in results, errors, names and descriptions every
// control character but newline and tab, and every character that
// reorders or hides text (bidi, zero-width), is shown escaped (\x1b,
// \u202e) to the model and the editor alike; names and descriptions are
// bounded, schemas are bounded, and a server that fails to
// start or dies fails alone: [Set.Failed] and [Set.Servers] say which and
// why ([ServerError], with the end of a stdio server's stderr), its tools
// return that error, and the others go on. [Set.Close] ends every server:
// a stdio server's stdin is closed, then its process group is sent SIGTERM
// and SIGKILL if it does not exit, and whatever is left of the group is
// killed once it has.
package mcp
