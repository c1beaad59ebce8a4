// Package maven drives a real origin with the real mvn client: deploys of
// release and SNAPSHOT artifacts with a password and with an API token,
// resolution through a parent POM, an import-scope BOM and build
// extensions from a fresh local repository, plus the HTTP-level error,
// policy and authorization paths of the maven format.
package maven
