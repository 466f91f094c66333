// Byte-fallback SentencePiece vocabulary of the generated model. Order matters and is fixed:
// ids are baked into the file (and tests), so only ever append.
export const enum TokenType { Normal = 1, Unknown = 2, Control = 3, Byte = 6 }

export interface Vocab {
  tokens: string[];
  scores: Float32Array;
  types: Int32Array;
  bos: number;
  eos: number;
  unk: number;
  imStart: number;
  imEnd: number;
}

const SP = "\u2581"; // SentencePiece's visible space

// Common English words; every prefix of each (with and without the leading ▁) is added too,
// because the SPM tokenizer only reaches a piece through merges of pieces already in the vocab.
const WORDS = (
  "the be to of and a in that have it for not on with he as you do at this but his by from they we say " +
  "her she or an will my one all would there their what so up out if about who get which go me when make " +
  "can like time no just him know take people into year your good some could them see other than then now " +
  "look only come its over think also back after use two how our work first well way even new want because " +
  "any these give day most us is are was were has had been hello world model token local server agent tool " +
  "call data file test yes ok thank please help question answer text here more very much"
).split(" ");

export function buildVocab(): Vocab {
  const tokens: string[] = [];
  const types: number[] = [];
  const seen = new Set<string>();
  const add = (t: string, type: TokenType) => {
    if (seen.has(t)) return;
    seen.add(t);
    tokens.push(t);
    types.push(type);
  };
  add("<unk>", TokenType.Unknown);
  add("<s>", TokenType.Control);
  add("</s>", TokenType.Control);
  for (let b = 0; b < 256; b++) add(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`, TokenType.Byte);
  add("<|im_start|>", TokenType.Control);
  add("<|im_end|>", TokenType.Control);
  add(SP, TokenType.Normal);
  for (let c = 0x21; c <= 0x7e; c++) add(String.fromCharCode(c), TokenType.Normal);
  for (const w of WORDS) {
    for (const word of [w, SP + w]) {
      for (let i = 2; i <= word.length; i++) add(word.slice(0, i), TokenType.Normal);
    }
  }
  // Score = length, ties broken by order: the tokenizer merges the highest-scoring pair first,
  // so longer known pieces win and tokenization is deterministic.
  const scores = new Float32Array(tokens.length);
  tokens.forEach((t, i) => { scores[i] = types[i] === TokenType.Normal ? [...t].length - i * 1e-5 : 0; });
  return {
    tokens,
    scores,
    types: Int32Array.from(types),
    unk: 0,
    bos: 1,
    eos: 2,
    imStart: tokens.indexOf("<|im_start|>"),
    imEnd: tokens.indexOf("<|im_end|>"),
  };
}

export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
