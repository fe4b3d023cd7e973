// harmonia-play snapcast-control: what snapserver starts as a stream's
// control script — specs/snapcast-control.md
import ArgumentParser
import HarmoniaControl
import HarmoniaSnapcastControl
#if canImport(Glibc)
import Glibc
#endif

struct SnapcastControlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapcast-control",
        abstract: "Bridge Snapcast's stream control (play, pause, next, seek, metadata) to a player's control socket.",
        discussion: """
            Started by snapserver as a stream's control script (controlscript= in the source
            URL); speaks Snapcast's plugin JSON-RPC on standard input and output, and the
            player's control protocol on the Unix socket named by HARMONIA_CONTROL (a path,
            or unix:PATH). Retries until the player listens; exits when standard input ends.
            Unknown arguments (snapserver's --stream=NAME --snapcast-port=PORT) are ignored.
            Logs go to standard error (snapserver's log).

            snapserver 0.26 takes only a file as the control script, so use a wrapper:
              #!/bin/sh
              exec env HARMONIA_CONTROL=/run/user/1000/harmonia.sock harmonia-play snapcast-control "$@"
            """
    )

    @Argument(parsing: .allUnrecognized, help: .hidden)
    var ignored: [String] = []

    func run() throws {
        // First: snapserver's descriptors (its listening sockets among them)
        // must not live on in this process.
        SnapcastControlBridge.closeInheritedDescriptors()
        // snapserver's blocked signals are inherited too: unblocked, so that
        // SIGTERM and SIGINT end the bridge as they end any program.
        var none = sigset_t()
        sigemptyset(&none)
        sigprocmask(SIG_SETMASK, &none, nil)
        signal(SIGPIPE, SIG_IGN)
        guard let value = getenv("HARMONIA_CONTROL").map({ String(cString: $0) }), !value.isEmpty else {
            Console.err("harmonia-play snapcast-control: HARMONIA_CONTROL is not set (the player's control socket, as given to --control unix:PATH)")
            throw ExitCode(2)
        }
        let path = value.hasPrefix("unix:") ? String(value.dropFirst(5)) : value
        let bridge = SnapcastControlBridge(socketPath: path) { Console.err("harmonia-play snapcast-control: \($0)") }
        bridge.run()
        // Standard input ended: snapserver is gone.
        throw ExitCode.success
    }
}
