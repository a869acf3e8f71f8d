import FoundationEssentials
import GeotriggerCore

/// A trip file for `replay` and `simulate` (docs/trips.md "Trips in replay and simulate"): the
/// JSON of a trip request (docs/trips.md "The request") plus an optional `"id"`, the trip id
/// (else the file name without `.trip.json`, or without its extension). A `route` or `to` given
/// as `{"layer", "fence"}` is looked up in the fences the command loaded; a GeoJSON route is
/// taken as it is.
struct TripFile: Sendable {
    /// The path as given.
    let file: String
    let request: TripRequest
    /// The request as a dispatcher publishes it on `PREFIX/trips/TRIP_ID`: the file's object
    /// without `id`.
    let object: JSONObject

    var id: String { request.id }

    /// How a trip file's name ends, to be found beside its track.
    static let suffix = ".trip.json"

    /// The trip file beside `track`, if there is one: the track's path with its last extension
    /// replaced by `.trip.json` (`routes/van-run.jsonl`: `routes/van-run.trip.json`).
    static func beside(_ track: String) -> String? {
        let path = stem(of: track, removing: nil) + suffix
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// `path` without `.trip.json`, else without its last extension (never a leading dot's).
    /// `removing`: the ending to try first.
    private static func stem(of path: String, removing ending: String?) -> String {
        if let ending, path.hasSuffix(ending), path.count > ending.count { return String(path.dropLast(ending.count)) }
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        guard let dot = path[slash...].lastIndex(of: "."), dot > slash else { return path }
        return String(path[..<dot])
    }

    /// The trip id a file name gives: its name without the folder and without `.trip.json`
    /// (else without its extension).
    static func id(fromName path: String) -> String {
        let stem = stem(of: path, removing: suffix)
        return stem.lastIndex(of: "/").map { String(stem[stem.index(after: $0)...]) } ?? stem
    }

    /// Reads and checks `path`: the request's rules (as `serve` checks a published request,
    /// against `snapshot`'s fences) and the `id`. Every error names the file, the line and
    /// column of the key concerned where there is one, and what was expected.
    /// `created`: the trip's creation time (part of its event ids).
    static func read(_ path: String, snapshot: EngineSnapshot, maxVertices: Int, created: Double) throws(UsageError) -> TripFile {
        guard let data = FileManager.default.contents(atPath: path) else { throw UsageError("\(path): cannot read the trip file") }
        let bytes = [UInt8](data)
        let document: JSONDocument
        do {
            document = try JSONReader.parse(bytes, file: path, dialect: .json)
        } catch {
            throw UsageError("\(error.description); expected a trip: \(shape)")
        }
        guard case .object(var object) = document.value else {
            throw UsageError("\(path): expected a JSON object, a trip: \(shape); found \(document.value.typeName)")
        }
        let id: String
        switch object["id"] {
        case nil, .null?:
            id = Self.id(fromName: path)
            if let problem = TripRequest.problem(withID: id) {
                throw UsageError("\(path): the trip id is the file's name, \"\(id)\": \(problem); give \"id\" in the file")
            }
        case .string(let given)?:
            id = given
            if let problem = TripRequest.problem(withID: id) { throw UsageError("\(at(document, "id", path)): \"id\": \(problem)") }
        case let other?:
            throw UsageError("\(at(document, "id", path)): \"id\" must be a trip id (a string of A-Z, a-z, 0-9, _ and -), found \(other.typeName)")
        }
        object["id"] = nil
        switch TripRequest.parse(bytes, id: id, topic: path, snapshot: snapshot, maxVertices: maxVertices, created: created) {
        case .success(let request):
            return TripFile(file: path, request: request, object: object)
        case .failure(let problem):
            // A request's messages begin with the key they are about ("\"corridor\" must be…").
            var key: String?
            if problem.message.hasPrefix("\""), let end = problem.message.dropFirst().firstIndex(of: "\"") {
                key = String(problem.message[problem.message.index(after: problem.message.startIndex)..<end])
            }
            throw UsageError("\(key.map { at(document, $0, path) } ?? path): \(problem.message)")
        }
    }

    /// `FILE:LINE:COLUMN` of `key` in the document's object, else `FILE`.
    private static func at(_ document: JSONDocument, _ key: String, _ path: String) -> String {
        document.location(of: [.key(key)]).map { "\(path):\($0)" } ?? path
    }

    static let shape = "{\"id\": TRIP_ID, " + TripRequest.shape.dropFirst()

    /// The request to publish, with `by` moved by `shift` seconds (as `simulate --recorded` moves
    /// the fix times).
    func payload(shiftingBy shift: Double) -> [UInt8] {
        var published = object
        if shift != 0, let by = request.plan.by {
            published["by"] = .string(ISO8601Time.format(by + shift, milliseconds: (by + shift).rounded() != by + shift))
        }
        return JSONValue.object(published).serializedBytes()
    }
}
