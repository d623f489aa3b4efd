package jsonrpc_test

import (
	"context"
	"fmt"
	"io"

	"github.com/sessionkit/sessionkit/internal/jsonrpc"
)

// Two connections joined by pipes: the agent answers a request after sending
// a notification, which the client has handled by the time Call returns.
func Example() {
	clientIn, agentOut := io.Pipe()
	agentIn, clientOut := io.Pipe()

	var agent *jsonrpc.Conn
	agent = jsonrpc.NewConn(agentIn, agentOut, jsonrpc.Options{
		Handler: func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			if req.Method != "greet" {
				return nil, jsonrpc.MethodNotFoundError(req.Method)
			}
			var p struct{ Name string }
			if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
				return nil, err
			}
			if err := agent.Notify(ctx, "progress", map[string]string{"step": "thinking"}); err != nil {
				return nil, err
			}
			return "hello, " + p.Name, nil
		},
	})
	client := jsonrpc.NewConn(clientIn, clientOut, jsonrpc.Options{
		Handler: func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			fmt.Printf("notification %s %s\n", req.Method, req.Params)
			return nil, nil
		},
	})

	var greeting string
	if err := client.Call(context.Background(), "greet", map[string]string{"name": "Ada"}, &greeting); err != nil {
		fmt.Println(err)
	}
	fmt.Println(greeting)

	err := client.Call(context.Background(), "greet", map[string]int{"name": 1}, nil)
	fmt.Println(err)
	err = client.Call(context.Background(), "dance", nil, nil)
	fmt.Println(err)

	client.Close()
	agent.Close()
	_ = client.Wait()
	_ = agent.Wait()
	// Output:
	// notification progress {"step":"thinking"}
	// hello, Ada
	// invalid params: field "Name": expected string, got number (jsonrpc error -32602)
	// method not found: "dance" (jsonrpc error -32601)
}
