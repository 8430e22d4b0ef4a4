package zenohpath_test

import (
	"context"
	"fmt"
	"time"

	"github.com/picobridge/picobridge/zenohpath"
)

// startRouter runs an in-process router on a free loopback port.
func startRouter() (*zenohpath.Router, string) {
	r := zenohpath.NewRouter(zenohpath.RouterConfig{})
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	return r, ln.Endpoint()
}

// Two client sessions publish and subscribe through a router.
func Example() {
	r, ep := startRouter()
	defer r.Close()
	ctx := context.Background()

	sub, _ := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	defer sub.Close()
	samples, _ := sub.DeclareSubscriberChan("demo/**", 8)

	pub, _ := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	defer pub.Close()
	p, _ := pub.DeclarePublisher("demo/hello", zenohpath.PublisherOptions{Express: true})
	for !p.HasMatchingSubscribers() { // the subscriber's declaration travels through the router
		time.Sleep(10 * time.Millisecond)
	}
	_ = p.Put([]byte("world"), nil)

	s := <-samples.Samples()
	fmt.Println(s.KeyExpr(), string(s.Payload()), s.Express())
	// Output: demo/hello world true
}

// A subscriber with a callback.
func ExampleSession_DeclareSubscriber() {
	r, ep := startRouter()
	defer r.Close()
	ctx := context.Background()
	s1, _ := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	defer s1.Close()
	got := make(chan string, 1)
	_, _ = s1.DeclareSubscriber("sensors/*/temp", func(s zenohpath.Sample) {
		got <- fmt.Sprintf("%s %s %s", s.Kind(), s.KeyExpr(), s.Payload())
	})
	s2, _ := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	defer s2.Close()
	p, _ := s2.DeclarePublisher("sensors/kitchen/temp", zenohpath.PublisherOptions{})
	for !p.HasMatchingSubscribers() {
		time.Sleep(10 * time.Millisecond)
	}
	_ = p.Put([]byte("21.5"), nil)
	fmt.Println(<-got)
	// Output: put sensors/kitchen/temp 21.5
}

// A queryable answers a Get from another session.
func ExampleSession_Get() {
	r, ep := startRouter()
	defer r.Close()
	ctx := context.Background()
	srv, _ := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	defer srv.Close()
	_, _ = srv.DeclareQueryable("calc/add", func(q *zenohpath.Query) {
		_ = q.Reply("calc/add", []byte("answer to "+q.Parameters()), nil)
	}, &zenohpath.QueryableOptions{Complete: true})

	cli, _ := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	defer cli.Close()
	for !cli.HasMatchingQueryables("calc/add") {
		time.Sleep(10 * time.Millisecond)
	}
	replies, _ := cli.Get("calc/add?a=1;b=2", &zenohpath.GetOptions{Timeout: 2 * time.Second})
	for rep := range replies {
		if s, ok := rep.Ok(); ok {
			fmt.Println(s.KeyExpr(), string(s.Payload()))
		}
	}
	// Output: calc/add answer to a=1;b=2
}

// Liveliness: a subscriber sees a token appear and go, a Get lists it.
func ExampleLiveliness() {
	r, ep := startRouter()
	defer r.Close()
	ctx := context.Background()
	mon, _ := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	defer mon.Close()
	events := make(chan string, 4)
	_, _ = mon.Liveliness().DeclareSubscriber("fleet/**", func(s zenohpath.Sample) {
		events <- s.Kind().String() + " " + s.KeyExpr()
	}, &zenohpath.LivelinessSubscriberOptions{History: true})

	dev, _ := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	_, _ = dev.Liveliness().DeclareToken("fleet/robot1")
	fmt.Println(<-events)

	alive, _ := mon.Liveliness().Get("fleet/**", nil)
	for rep := range alive {
		s, _ := rep.Ok()
		fmt.Println("alive", s.KeyExpr())
	}
	_ = dev.Close() // the token goes with its session
	fmt.Println(<-events)
	// Output:
	// put fleet/robot1
	// alive fleet/robot1
	// delete fleet/robot1
}
