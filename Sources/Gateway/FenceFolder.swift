#if canImport(Glibc)
import Glibc
#endif
import GeotriggerCore

/// The fences folder: every `NAME.geojson` in it is the fence layer `NAME` (docs/configuration.md "Fence files").
///
/// The core parses; this type does the file I/O, with POSIX calls.
public enum FenceFolder {
    /// Loads every `*.geojson` in `folder` (sorted by name; hidden files skipped). Files are named
    /// in messages as `folder/NAME.geojson`. Returns the layers (each with its valid fences) and
    /// every error of every file; a folder that cannot be read is one error.
    /// A fence with more than `maxVertices` positions is an error naming its file and feature.
    /// `progress`: told how far the load is (it logs a long one).
    public static func load(
        _ folder: String, maxVertices: Int = FenceLayerParser.defaultMaxVertices
    ) -> (layers: [FenceLayer], errors: [FenceError]) {
        load(folder, maxVertices: maxVertices, progress: nil)
    }

    /// `reusing`: the live snapshot on a SIGHUP reload; a fence it has unchanged keeps its
    /// prepared form (``FenceLayerParser``) instead of being prepared again.
    static func load(
        _ folder: String, maxVertices: Int = FenceLayerParser.defaultMaxVertices, progress: FenceLoadProgress?,
        reusing previous: EngineSnapshot? = nil
    ) -> (layers: [FenceLayer], errors: [FenceError]) {
        let names: [String]
        do {
            names = try layerFileNames(in: folder)
        } catch {
            return ([], [FenceError(file: folder, message: "cannot read the fences folder: \(error.message)")])
        }
        var layers: [FenceLayer] = []
        var errors: [FenceError] = []
        if let progress {
            progress.start(totalBytes: names.reduce(0) { $0 + fileSize(join(folder, $1)) })
        }
        defer { if !Task.isCancelled { progress?.finish() } }
        for name in names {
            // A SIGHUP reload cancelled by a stop (``ServiceGroup``) ends here, or at its next read.
            if Task.isCancelled {
                errors.append(FenceError(file: folder, message: FenceFolder.cancelled))
                break
            }
            let path = join(folder, name)
            let layerName = String(name.dropLast(".geojson".count))
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                errors.append(FenceError(file: path, message: "cannot read: \(FileError.fromErrno().message)"))
                continue
            }
            defer { close(fd) }
            var fileFeatures = 0, fileBytes = 0
            defer { progress?.fileDone(features: fileFeatures, bytes: fileBytes) }
            let update: ((Int, Int) -> Void)? = progress.map { progress in
                { features, bytesRead in
                    fileFeatures = features
                    fileBytes = bytesRead
                    progress.update(features: features, bytesRead: bytesRead)
                }
            }
            // Read in chunks as the parser asks (it never holds the whole text of a valid file).
            do {
                let (layer, layerErrors) = try FenceLayerParser.parse(
                    file: path, layer: layerName, maxVertices: maxVertices, fileSize: fileSize(path), reusing: previous,
                    progress: update
                ) { offset, buffer throws(FenceError) in
                    if Task.isCancelled { throw FenceError(file: path, message: FenceFolder.cancelled) }
                    while true {
                        let n = pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
                        if n >= 0 { return n }
                        if errno != EINTR {
                            throw FenceError(file: path, message: "cannot read: \(FileError.fromErrno().message)")
                        }
                    }
                }
                layers.append(layer)
                errors += layerErrors
            } catch {
                errors.append(error)
            }
        }
        return (layers, errors)
    }

    /// The error of a load whose task was cancelled.
    static let cancelled = "the load was cancelled"

    /// The names of the layer files in `folder`, sorted.
    static func layerFileNames(in folder: String) throws(FileError) -> [String] {
        guard let dir = opendir(folder) else { throw FileError.fromErrno() }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if !name.hasPrefix("."), name.hasSuffix(".geojson"), name.count > ".geojson".count {
                names.append(name)
            }
        }
        return names.sorted()
    }

    /// The size of `path` in bytes (0 if it cannot be read).
    static func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// `folder/name`, without doubling a slash.
    static func join(_ folder: String, _ name: String) -> String {
        folder.hasSuffix("/") ? folder + name : folder + "/" + name
    }

    /// A failed file-system call, with the C library's message.
    struct FileError: Error {
        var message: String

        static func fromErrno() -> FileError {
            FileError(message: String(cString: strerror(errno)))
        }
    }
}
