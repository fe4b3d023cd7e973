// TEMPORARY STUB (not committed): replaced by the database group.
public struct MPDDatabaseCommands: MPDCommandGroup {
    public init(library: MPDLibraryAccess) {}
    public let commands: [MPDCommandInfo] = []
    public func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError) {}
}
