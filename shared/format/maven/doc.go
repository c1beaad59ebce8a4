// Package maven serves Maven 2 layout repositories (format ids "maven" and
// "gradle") at /maven2/<repo>/... and its alias /maven/<repo>/...: a plain
// file tree <group as dirs>/<artifactId>/<version>/<file> that mvn, Gradle
// and every Maven-aware tool read and deploy to.
//
// Files are stored as artifacts at their path (package "groupId:artifactId",
// version the directory's version, so a SNAPSHOT's timestamped files all
// belong to "1.0-SNAPSHOT"). maven-metadata.xml is never stored: it is
// generated from the stored files on every read, so the snapshot build
// numbers a client derives from it always match what is really there.
// Checksum sidecars are served from the artifact's checksums (or hashed
// from the generated document) and only verified on upload.
//
// parse.go, checksum.go, version.go and metadata.go are pure and bounded;
// maven.go, read.go and write.go are the routes.
package maven
