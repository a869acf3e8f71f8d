/// Compiles the Arcade expressions of a snapshot's watches, each distinct (source, key) once,
/// and reports a problem once where it was written: the config trigger, or the layer defaults.
struct ExpressionCompiler {
    private var compiled: [String: Result<ArcadeExpression, ArcadeError>] = [:]
    private var reported: Set<String> = []

    /// The compiled `where`, `filter` and `message` of `settings`; nil (with issues added) if one fails.
    mutating func expressions(
        settings: TriggerSettings, trigger: Trigger, layer: FenceLayer, issues: inout [TriggerIssue]
    ) -> TriggerExpressions? {
        var result = TriggerExpressions()
        var ok = true
        let keys: [(String, String?, Bool)] = [
            ("where", settings.whereClause, trigger.options.whereClause != nil),
            ("filter", settings.filter, trigger.options.filter != nil),
            ("message", settings.message, trigger.options.message != nil),
        ]
        for (key, source, fromTrigger) in keys {
            guard let source else { continue }
            let outcome: Result<ArcadeExpression, ArcadeError>
            if let done = compiled[key + "\u{0}" + source] {
                outcome = done
            } else {
                do throws(ArcadeError) {
                    let expression = try ArcadeExpression(source)
                    let allowed = TriggerExpressions.allowedVariables[key] ?? []
                    if let bad = expression.variables.first(where: { !allowed.contains($0) }) {
                        let names = allowed.sorted().map { "$" + $0 }.joined(separator: ", ")
                        throw ArcadeError("$\(bad) is not available in \(key) (it sees \(names))")
                    }
                    outcome = .success(expression)
                } catch {
                    outcome = .failure(error)
                }
                compiled[key + "\u{0}" + source] = outcome
            }
            switch outcome {
            case .success(let expression):
                switch key {
                case "where": result.whereClause = expression
                case "filter": result.filter = expression
                default: result.message = expression
                }
            case .failure(let error):
                ok = false
                let issue: TriggerIssue
                if fromTrigger, case .config(let index) = trigger.source {
                    issue = TriggerIssue(
                        origin: .config, path: [.key("triggers"), .index(index), .key(key)], subject: trigger.label,
                        key: key, message: error.description)
                } else {
                    issue = TriggerIssue(
                        origin: .layer(name: layer.name, file: layer.file), path: [.key("geotrigger"), .key(key)],
                        subject: layer.file.isEmpty ? "layer \"\(layer.name)\"" : layer.file, key: "geotrigger.\(key)",
                        message: error.description)
                }
                if reported.insert(issue.description).inserted { issues.append(issue) }
            }
        }
        return ok ? result : nil
    }
}
