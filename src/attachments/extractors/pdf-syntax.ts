/**
 * Just enough PDF syntax to read the dictionaries of a PDF's streams the way PDF.js reads them:
 * a port of the lexer and object parser of PDF.js 5 (src/core/parser.js, the build unpdf ships),
 * kept to the same leniencies (a key that is not a name is skipped, `#xx` escapes in names, the
 * search for `endstream` when /Length is wrong), so a file cannot show this reader one structure
 * and PDF.js another. Used by pdf-stream-guard.ts; it never decodes a stream.
 */

export class PdfName {
  constructor(
    readonly name: string,
    /** Offset of the name's `/`. */
    readonly at: number,
  ) {}
}

export class PdfRef {
  constructor(
    readonly num: number,
    readonly gen: number,
  ) {}

  get key(): string {
    return `${this.num} ${this.gen}`;
  }
}

/** A keyword (operator) token: `obj`, `stream`, `R`, `[`, `<<` … */
export class PdfCmd {
  constructor(
    readonly cmd: string,
    /** Offset of the token's first byte. */
    readonly at: number,
  ) {}
}

/** A dictionary, with where each key's token starts (a key's `/`). */
export class PdfDict {
  readonly values = new Map<string, PdfValue>();
  /** Offsets of every occurrence of each key, duplicates included. */
  readonly keyOffsets = new Map<string, number[]>();

  get(...keys: string[]): PdfValue | undefined {
    for (const key of keys) {
      const value = this.values.get(key);
      if (value !== undefined) return value;
    }
    return undefined;
  }
}

/** A literal or hexadecimal string, its bytes as a latin1 string (escapes decoded as PDF.js decodes them). */
export class PdfString {
  constructor(readonly bytes: string) {}
}

export const PDF_EOF = Symbol('eof');

export type PdfValue = number | boolean | null | PdfString | PdfName | PdfRef | PdfCmd | PdfDict | PdfValue[];
type Token = number | boolean | null | PdfString | PdfName | PdfCmd | typeof PDF_EOF;

/** A stream object as PDF.js would make it: its dictionary and where its data starts. */
export interface PdfStreamHead {
  dict: PdfDict;
  /** Offset of the `stream` keyword. */
  keywordAt: number;
  /** Offset of the first data byte (after the end of line that follows `stream`). */
  dataStart: number;
}

/** The parse cannot be trusted to match PDF.js (an inline image inside an object). */
export class PdfSyntaxUnsupported extends Error {}

// PDF.js's specialChars: 1 whitespace, 2 delimiter.
const SPECIAL = new Uint8Array(256);
for (const c of [0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]) SPECIAL[c] = 1;
for (const c of [0x25, 0x28, 0x29, 0x2f, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d]) SPECIAL[c] = 2;

export function isPdfWhiteSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c & 0x0f;
  if ((c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)) return (c & 0x0f) + 9;
  return -1;
}

class SyntaxFault extends Error {}

/** PDF.js's Lexer over a byte range (getObj, getNumber, getString, getName, getHexString). */
export class PdfLexer {
  private pos: number;
  private current = -1;

  constructor(
    private readonly bytes: Uint8Array,
    start: number,
    private readonly end = bytes.length,
    /** In an inline image's dictionary: `ID` ends a keyword, as PDF.js's content lexer (which knows the operators) ends it. */
    private readonly inlineImage = false,
  ) {
    this.pos = start;
    this.nextChar();
  }

  /** Offset of the current character (one past the last token read). */
  get offset(): number {
    return this.pos - 1;
  }

  private nextChar(): number {
    this.current = this.pos < this.end ? this.bytes[this.pos] : -1;
    this.pos += 1;
    return this.current;
  }

  private peekChar(): number {
    return this.pos < this.end ? this.bytes[this.pos] : -1;
  }

  /** Moves to `offset` (the next token is read from there). */
  seek(offset: number): void {
    this.pos = offset;
    this.nextChar();
  }

  skipToNextLine(): void {
    let ch = this.current;
    while (ch >= 0) {
      if (ch === 0x0d) {
        ch = this.nextChar();
        if (ch === 0x0a) this.nextChar();
        break;
      } else if (ch === 0x0a) {
        this.nextChar();
        break;
      }
      ch = this.nextChar();
    }
  }

  getObj(): Token {
    let comment = false;
    let ch = this.current;
    for (;;) {
      if (ch < 0) return PDF_EOF;
      if (comment) {
        if (ch === 0x0a || ch === 0x0d) comment = false;
      } else if (ch === 0x25) {
        comment = true;
      } else if (SPECIAL[ch] !== 1) {
        break;
      }
      ch = this.nextChar();
    }
    const at = this.offset;
    switch (ch | 0) {
      case 0x30:
      case 0x31:
      case 0x32:
      case 0x33:
      case 0x34:
      case 0x35:
      case 0x36:
      case 0x37:
      case 0x38:
      case 0x39:
      case 0x2b:
      case 0x2d:
      case 0x2e:
        return this.getNumber();
      case 0x28:
        return this.getString();
      case 0x2f:
        return this.getName();
      case 0x5b:
        this.nextChar();
        return new PdfCmd('[', at);
      case 0x5d:
        this.nextChar();
        return new PdfCmd(']', at);
      case 0x3c:
        ch = this.nextChar();
        if (ch === 0x3c) {
          this.nextChar();
          return new PdfCmd('<<', at);
        }
        return this.getHexString();
      case 0x3e:
        ch = this.nextChar();
        if (ch === 0x3e) {
          this.nextChar();
          return new PdfCmd('>>', at);
        }
        return new PdfCmd('>', at);
      case 0x7b:
        this.nextChar();
        return new PdfCmd('{', at);
      case 0x7d:
        this.nextChar();
        return new PdfCmd('}', at);
      case 0x29:
        this.nextChar();
        throw new SyntaxFault(`illegal character ${ch}`);
    }
    let str = String.fromCharCode(ch);
    if (ch < 0x20 || ch > 0x7f) {
      const next = this.peekChar();
      if (next >= 0x20 && next <= 0x7f) {
        this.nextChar();
        return new PdfCmd(str, at);
      }
    }
    while (!(this.inlineImage && str === 'ID') && (ch = this.nextChar()) >= 0 && !SPECIAL[ch]) {
      if (str.length === 128) throw new SyntaxFault('command token too long');
      str += String.fromCharCode(ch);
    }
    if (this.inlineImage && str === 'ID') {
      this.nextChar(); // the character after ID, which PDF.js's lexer reads to end the token …
      this.nextChar(); // … and skips: the data starts after it
    }
    if (str === 'true') return true;
    if (str === 'false') return false;
    if (str === 'null') return null;
    return new PdfCmd(str, at);
  }

  private getNumber(): number {
    let ch = this.current;
    let divideBy = 0;
    let sign = 1;
    if (ch === 0x2d) {
      sign = -1;
      ch = this.nextChar();
      if (ch === 0x2d) ch = this.nextChar();
    } else if (ch === 0x2b) {
      ch = this.nextChar();
    }
    if (ch === 0x0a || ch === 0x0d) {
      do ch = this.nextChar();
      while (ch === 0x0a || ch === 0x0d);
    }
    if (ch === 0x2e) {
      divideBy = 10;
      ch = this.nextChar();
    }
    if (ch < 0x30 || ch > 0x39) {
      if (isPdfWhiteSpace(ch) || ch === 0x28 || ch === 0x3c || ch === -1) return 0;
      throw new SyntaxFault('invalid number');
    }
    let base = ch - 0x30;
    while ((ch = this.nextChar()) >= 0) {
      if (ch >= 0x30 && ch <= 0x39) {
        if (divideBy !== 0) divideBy *= 10;
        base = base * 10 + (ch - 0x30);
      } else if (ch === 0x2e) {
        if (divideBy === 0) divideBy = 1;
        else break;
      } else if (ch !== 0x2d) {
        break;
      }
    }
    if (divideBy !== 0) base /= divideBy;
    return sign * base;
  }

  private getString(): PdfString {
    let depth = 1;
    let out = '';
    let ch = this.nextChar();
    for (;;) {
      let charBuffered = false;
      let done = false;
      switch (ch | 0) {
        case -1:
          done = true;
          break;
        case 0x28:
          depth += 1;
          out += '(';
          break;
        case 0x29:
          depth -= 1;
          if (depth === 0) {
            this.nextChar();
            done = true;
          } else {
            out += ')';
          }
          break;
        case 0x5c:
          ch = this.nextChar();
          switch (ch) {
            case -1:
              done = true;
              break;
            case 0x6e:
              out += '\n';
              break;
            case 0x72:
              out += '\r';
              break;
            case 0x74:
              out += '\t';
              break;
            case 0x62:
              out += '\b';
              break;
            case 0x66:
              out += '\f';
              break;
            case 0x5c:
            case 0x28:
            case 0x29:
              out += String.fromCharCode(ch);
              break;
            case 0x30:
            case 0x31:
            case 0x32:
            case 0x33:
            case 0x34:
            case 0x35:
            case 0x36:
            case 0x37: {
              let x = ch & 0x0f;
              ch = this.nextChar();
              charBuffered = true;
              if (ch >= 0x30 && ch <= 0x37) {
                x = (x << 3) + (ch & 0x0f);
                ch = this.nextChar();
                if (ch >= 0x30 && ch <= 0x37) {
                  charBuffered = false;
                  x = (x << 3) + (ch & 0x0f);
                }
              }
              out += String.fromCharCode(x & 0xff);
              break;
            }
            case 0x0d:
              if (this.peekChar() === 0x0a) this.nextChar();
              break;
            case 0x0a:
              break;
            default:
              out += String.fromCharCode(ch);
          }
          break;
        default:
          out += String.fromCharCode(ch);
      }
      if (done) break;
      if (!charBuffered) ch = this.nextChar();
    }
    return new PdfString(out);
  }

  private getName(): PdfName {
    const at = this.offset;
    let name = '';
    let ch: number;
    while ((ch = this.nextChar()) >= 0 && !SPECIAL[ch]) {
      if (ch === 0x23) {
        ch = this.nextChar();
        if (SPECIAL[ch]) {
          name += '#';
          break;
        }
        const high = hexDigit(ch);
        if (high !== -1) {
          const previous = ch;
          ch = this.nextChar();
          const low = hexDigit(ch);
          if (low === -1) {
            name += '#' + String.fromCharCode(previous);
            if (SPECIAL[ch]) break;
            name += String.fromCharCode(ch);
            continue;
          }
          name += String.fromCharCode((high << 4) | low);
        } else {
          name += '#' + String.fromCharCode(ch);
        }
      } else {
        name += String.fromCharCode(ch);
      }
    }
    return new PdfName(name, at);
  }

  private getHexString(): PdfString {
    let out = '';
    let ch = this.current;
    let first = -1;
    for (;;) {
      if (ch < 0) break;
      if (ch === 0x3e) {
        this.nextChar();
        break;
      }
      if (SPECIAL[ch] !== 1) {
        const digit = hexDigit(ch);
        if (digit !== -1) {
          if (first === -1) first = digit;
          else {
            out += String.fromCharCode((first << 4) | digit);
            first = -1;
          }
        }
      }
      ch = this.nextChar();
    }
    if (first !== -1) out += String.fromCharCode(first << 4);
    return new PdfString(out);
  }
}

/**
 * PDF.js's Parser (buf1/buf2 look-ahead, getObj) for objects outside content streams. `stream`
 * after a dictionary ends the parse with the stream's head (PDF.js's makeStream starts there).
 */
export class PdfParser {
  private buf1: Token;
  private buf2: Token;

  constructor(private readonly lexer: PdfLexer) {
    this.buf1 = lexer.getObj();
    this.buf2 = isCmd(this.buf1, 'ID') ? null : lexer.getObj(); // nothing is read past an inline image's ID
  }

  /** One object; a dictionary followed by `stream` gives its stream head. Null when the syntax fails. */
  static objectAt(bytes: Uint8Array, offset: number, end = bytes.length): { value: PdfValue; stream: PdfStreamHead | null } | null {
    try {
      const parser = new PdfParser(new PdfLexer(bytes, offset, end));
      return parser.value(0);
    } catch (error) {
      if (error instanceof SyntaxFault || error instanceof RangeError) return null;
      throw error;
    }
  }

  /**
   * An inline image (`BI <dictionary> ID <data>`) whose `BI` ends just before `offset`, as PDF.js's
   * makeInlineImage reads it: its dictionary and where its data starts (past the one character
   * after `ID`); null when what follows `BI` is not one.
   */
  static inlineImageAt(bytes: Uint8Array, offset: number): { dict: PdfDict; dataStart: number } | null {
    try {
      const lexer = new PdfLexer(bytes, offset, bytes.length, true);
      const parser = new PdfParser(lexer);
      const dict = new PdfDict();
      for (let entries = 0; entries < 256; entries++) {
        if (isCmd(parser.buf1, 'ID')) return { dict, dataStart: lexer.offset };
        const key = parser.buf1;
        if (!(key instanceof PdfName)) return null; // PDF.js: "Dictionary key must be a name object"
        parser.shift();
        dict.values.set(key.name, parser.value(0).value);
      }
    } catch (error) {
      if (!(error instanceof SyntaxFault || error instanceof PdfSyntaxUnsupported)) throw error;
    }
    return null;
  }

  private shift(): void {
    if (this.buf2 instanceof PdfCmd && this.buf2.cmd === 'ID') {
      this.buf1 = this.buf2;
      this.buf2 = null;
    } else {
      this.buf1 = this.buf2;
      this.buf2 = this.lexer.getObj();
    }
  }

  private value(depth: number): { value: PdfValue; stream: PdfStreamHead | null } {
    if (depth > 1000) throw new SyntaxFault('nested too deep'); // PDF.js would overflow its stack
    const buf1 = this.buf1;
    this.shift();
    if (buf1 === PDF_EOF) throw new SyntaxFault('end of file');
    if (buf1 instanceof PdfCmd) {
      switch (buf1.cmd) {
        case 'BI':
          throw new PdfSyntaxUnsupported('an inline image inside an object');
        case '[': {
          const array: PdfValue[] = [];
          while (!isCmd(this.buf1, ']') && this.buf1 !== PDF_EOF) array.push(this.value(depth + 1).value);
          if (this.buf1 === PDF_EOF) throw new SyntaxFault('end of file inside an array');
          this.shift();
          return { value: array, stream: null };
        }
        case '<<': {
          const dict = new PdfDict();
          while (!isCmd(this.buf1, '>>') && this.buf1 !== PDF_EOF) {
            if (!(this.buf1 instanceof PdfName)) {
              this.shift();
              continue;
            }
            const key = this.buf1.name;
            const keyAt = this.buf1.at;
            this.shift();
            if ((this.buf1 as Token) === PDF_EOF) break;
            dict.values.set(key, this.value(depth + 1).value);
            const offsets = dict.keyOffsets.get(key);
            if (offsets) offsets.push(keyAt);
            else dict.keyOffsets.set(key, [keyAt]);
          }
          if (this.buf1 === PDF_EOF) throw new SyntaxFault('end of file inside a dictionary');
          if (isCmd(this.buf2, 'stream')) {
            const keyword = this.buf2 as PdfCmd;
            this.lexer.skipToNextLine();
            return { value: dict, stream: { dict, keywordAt: keyword.at, dataStart: this.lexer.offset } };
          }
          this.shift();
          return { value: dict, stream: null };
        }
        default:
          return { value: buf1, stream: null };
      }
    }
    if (typeof buf1 === 'number' && Number.isInteger(buf1)) {
      if (typeof this.buf1 === 'number' && Number.isInteger(this.buf1) && isCmd(this.buf2, 'R')) {
        const ref = new PdfRef(buf1, this.buf1);
        this.shift();
        this.shift();
        return { value: ref, stream: null };
      }
    }
    return { value: buf1, stream: null };
  }
}

export function isCmd(token: unknown, cmd: string): boolean {
  return token instanceof PdfCmd && token.cmd === cmd;
}
