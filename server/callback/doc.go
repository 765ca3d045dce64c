// Package callback is Natter's one client for outgoing HTTP callbacks (slash-command callbacks and
// event-subscription deliveries): signed JSON POSTs to URLs that integrators chose, made safely.
// A destination must resolve only to public addresses (netpolicy: private, loopback, link-local,
// reserved and mixed answers are refused, and the address dialled is the one checked), no
// environment proxy is used, redirects are not followed, and time and response size are
// bounded. It imports only netpolicy.
package callback
