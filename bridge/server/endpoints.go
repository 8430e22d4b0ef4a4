package server

import "github.com/picobridge/picobridge/ddspath"

// endpointSet records the remote DDS endpoints that want one gateway object
// (a topic route's reader or writer, a service route's side), by GUID: the
// object is made when the first one arrives and goes when the last one is
// gone. The three users:
//
//	dds.go          outRoute.writers, inRoute.readers (per DDS topic;
//	                removeEndpoint drops the route with its last endpoint)
//	services.go     svcServer readers/writers, svcClient writers/readers
//	graphin.go      rmw_zenoh tokens: virtual endpoints of GUID vendor
//	                graphVendor join the same sets (fromToken tells them apart)
//
// A GUID counts once however often discovery reports it alive; removing a
// GUID the set does not hold changes nothing. The zero value is an empty
// set. Not safe for concurrent use: the owner's lock guards it (b.mu for
// routes, sv.mu for services).
type endpointSet struct {
	m map[ddspath.GUID]bool
}

// add records g; first reports that the set was empty before.
func (s *endpointSet) add(g ddspath.GUID) (first bool) {
	if s.m == nil {
		s.m = map[ddspath.GUID]bool{}
	}
	first = len(s.m) == 0
	s.m[g] = true
	return first
}

// remove forgets g; last reports that no endpoint is left (also when g was
// not in the set and the set is empty).
func (s *endpointSet) remove(g ddspath.GUID) (last bool) {
	delete(s.m, g)
	return len(s.m) == 0
}

// track applies one discovery event: e.GUID is added when e.Alive, removed
// otherwise.
func (s *endpointSet) track(e ddspath.Endpoint) {
	if e.Alive {
		s.add(e.GUID)
	} else {
		s.remove(e.GUID)
	}
}

// len is the number of endpoints, real and token-made.
func (s *endpointSet) len() int { return len(s.m) }

// counts splits len: real DDS endpoints, and virtual ones made from
// rmw_zenoh tokens (graphin.go).
func (s *endpointSet) counts() (dds, tokens int) {
	for g := range s.m {
		if fromToken(g) {
			tokens++
		} else {
			dds++
		}
	}
	return dds, tokens
}
