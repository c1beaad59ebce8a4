// Package cli is depot's command line for what operators script: sign in
// (depot login, depot logout) and manage repositories, users, API
// tokens, edge nodes and webhooks, with table or JSON output.
//
// It is a client of the REST API (/api/v1) and nothing more: every rule
// (who may do what, what is valid) is the origin's application layer's,
// and the command line shows the server's answer, its error message
// included. client.go is the one place requests are made and answers
// read; api.go types them; commands.go and login.go are the commands.
package cli
