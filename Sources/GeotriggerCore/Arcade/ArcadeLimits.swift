/// The bounds that keep any expression from hanging or exhausting the gateway. Every
/// expression is refused at parse or stopped with an ``ArcadeError`` when it reaches one.
public enum ArcadeLimits {
    /// Longest source accepted, in UTF-8 bytes.
    public static let maximumSourceLength = 65_536
    /// Deepest nesting of parentheses, brackets, braces, unary operators and blocks.
    public static let maximumNesting = 64
    /// Deepest expression tree (a chain `a + b + c ...` is as deep as it is long).
    public static let maximumTreeDepth = 256
    /// Most steps one evaluation may take. A step is one operation, one element of an array
    /// or dictionary built, compared or written as text, or one KiB of text built.
    public static let maximumSteps = 10_000
    /// Longest text an evaluation may build, in UTF-8 bytes.
    public static let maximumTextLength = 65_536
}
