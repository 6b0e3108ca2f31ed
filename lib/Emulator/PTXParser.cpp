//===- PTXParser.cpp - PTX text to the emulator's instructions ------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// Reads the PTX LLVM's NVPTX back end writes: module directives, .entry
// functions with their parameters, register and shared declarations, labels
// and instructions. Each instruction is decoded once, here, into an opcode,
// types, flags and operands with register slots, so that the interpreter
// never looks at text.
//
//===----------------------------------------------------------------------===//

#include "PTXSemantics.h"
#include "attn/Emulator/PTX.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <unordered_map>

using namespace attn::emulator;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

/// `s` split at `separator`, outside braces and brackets.
std::vector<std::string_view> splitTopLevel(std::string_view s,
                                            char separator) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '{' || s[i] == '[')
      ++depth;
    else if (s[i] == '}' || s[i] == ']')
      --depth;
    else if (s[i] == separator && depth == 0) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::string_view last = trim(s.substr(start));
  if (!last.empty() || !parts.empty())
    parts.push_back(last);
  return parts;
}

/// The name of a variable declaration `... NAME[SIZE]`.
std::string variableName(std::string_view declaration) {
  size_t open = declaration.find('[');
  size_t start = declaration.find_last_of(" \t", open);
  start = start == std::string_view::npos ? 0 : start + 1;
  return std::string(declaration.substr(start, open - start));
}

std::vector<std::string_view> splitDots(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == '.') {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return parts;
}

/// The decimal count at the start of `s`, if at most `limit`.
std::optional<uint64_t> parseCount(std::string_view s, uint64_t limit) {
  s = trim(s);
  uint64_t value = 0;
  size_t digits = 0;
  while (digits < s.size() && isdigit(static_cast<unsigned char>(s[digits]))) {
    value = value * 10 + (s[digits++] - '0');
    if (value > limit)
      return std::nullopt;
  }
  if (!digits)
    return std::nullopt;
  return value;
}

std::optional<Type> parseType(std::string_view s) {
  static const std::unordered_map<std::string_view, Type> types = {
      {"pred", Type::Pred},     {"b8", Type::B8},       {"b16", Type::B16},
      {"b32", Type::B32},       {"b64", Type::B64},     {"u8", Type::U8},
      {"u16", Type::U16},       {"u32", Type::U32},     {"u64", Type::U64},
      {"s8", Type::S8},         {"s16", Type::S16},     {"s32", Type::S32},
      {"s64", Type::S64},       {"f16", Type::F16},     {"bf16", Type::BF16},
      {"f32", Type::F32},       {"f64", Type::F64},     {"f16x2", Type::F16x2},
      {"bf16x2", Type::BF16x2}, {"f32x2", Type::F32x2},
  };
  auto it = types.find(s);
  if (it == types.end())
    return std::nullopt;
  return it->second;
}

std::optional<Compare> parseCompare(std::string_view s) {
  static const std::unordered_map<std::string_view, Compare> compares = {
      {"eq", Compare::Eq},   {"ne", Compare::Ne},   {"lt", Compare::Lt},
      {"le", Compare::Le},   {"gt", Compare::Gt},   {"ge", Compare::Ge},
      {"lo", Compare::Lt},   {"ls", Compare::Le},   {"hi", Compare::Gt},
      {"hs", Compare::Ge},   {"equ", Compare::Equ}, {"neu", Compare::Neu},
      {"ltu", Compare::Ltu}, {"leu", Compare::Leu}, {"gtu", Compare::Gtu},
      {"geu", Compare::Geu}, {"num", Compare::Num}, {"nan", Compare::Nan},
  };
  auto it = compares.find(s);
  if (it == compares.end())
    return std::nullopt;
  return it->second;
}

/// Parses one kernel or the module around it; every error names its line.
class Parser {
public:
  Parser(std::string_view text, GlobalAllocator allocate)
      : text(text), allocate(allocate) {}

  std::unique_ptr<Module> parse(std::string &error);

private:
  struct Failure {
    std::string message;
  };
  [[noreturn]] void fail(const std::string &message) {
    throw Failure{"line " + std::to_string(line) + ": " + message};
  }

  /// The next statement (up to `;`, `{` or `}`), or a label (up to `:`).
  std::string_view nextStatement(char &terminator);
  /// `start`, a statement cut at a `{`, extended to its `;`.
  std::string_view restOfStatement(std::string_view start);
  void parseEntry(std::string_view header, Module &module);
  void parseParameters(std::string_view list, Kernel &kernel);
  void declareRegisters(std::string_view declaration);
  uint32_t declareShared(std::string_view declaration, uint32_t &top);
  void declareGlobal(std::string_view declaration, Module &module);
  void parseInstruction(std::string_view statement, Kernel &kernel);
  void decodeOpcode(std::string_view opcode, Instruction &inst);
  void parseOperand(std::string_view text, Instruction &inst);
  uint32_t registerSlot(std::string_view name);
  /// parseCount, or a failure naming `what`.
  uint64_t count(std::string_view text, uint64_t limit, const char *what);
  int64_t parseImmediate(std::string_view text);

  std::string_view text;
  GlobalAllocator allocate;
  size_t pos = 0;
  uint32_t line = 1;

  // Per kernel.
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> registerRanges;
  uint32_t registerCount = 0;
  std::unordered_map<std::string, uint32_t> sharedSymbols, labels,
      parameterOffsets;
  std::vector<std::pair<uint32_t, std::string>> branches;
  // Module-wide shared variables, at the start of every kernel's.
  std::unordered_map<std::string, uint32_t> moduleShared;
  // The addresses of the module's .global variables.
  std::unordered_map<std::string, uint64_t> globalSymbols;
  uint32_t moduleSharedBytes = 0;
  bool sawDynamicShared = false;
};

} // namespace

std::string_view Parser::nextStatement(char &terminator) {
  // Whitespace and whole-line comments between statements.
  while (pos < text.size()) {
    if (isspace(static_cast<unsigned char>(text[pos]))) {
      line += text[pos++] == '\n';
    } else if (text.substr(pos, 2) == "//") {
      size_t end = text.find('\n', pos);
      pos = end == std::string_view::npos ? text.size() : end;
    } else {
      break;
    }
  }
  size_t start = pos;
  // Module directives that end at their line, without `;`.
  for (std::string_view directive : {".version", ".target", ".address_size"})
    if (text.substr(pos, directive.size()) == directive) {
      size_t end = text.find('\n', pos);
      pos = end == std::string_view::npos ? text.size() : end;
      terminator = ';';
      return trim(text.substr(start, pos - start));
    }
  while (pos < text.size()) {
    char c = text[pos];
    if (c == '/' && pos + 1 < text.size() && text[pos + 1] == '/')
      fail("a comment inside a statement");
    if (c == '\n')
      ++line;
    if (c == ';' || c == '{' || c == '}' ||
        (c == ':' && pos > start &&
         trim(text.substr(start, pos - start)).find_first_of(" \t,[") ==
             std::string_view::npos)) {
      terminator = c;
      return trim(text.substr(start, pos++ - start));
    }
    ++pos;
  }
  terminator = 0;
  return trim(text.substr(start, pos - start));
}

std::string_view Parser::restOfStatement(std::string_view start) {
  size_t end = text.find(';', pos);
  if (end == std::string_view::npos)
    fail("unterminated statement");
  for (size_t i = pos; i < end; ++i)
    line += text[i] == '\n';
  size_t from = start.data() - text.data();
  pos = end + 1;
  return trim(text.substr(from, end - from));
}

std::unique_ptr<Module> Parser::parse(std::string &error) {
  auto module = std::make_unique<Module>();
  try {
    while (true) {
      char terminator;
      std::string_view statement = nextStatement(terminator);
      if (!terminator) {
        if (!statement.empty())
          fail("unterminated statement '" + std::string(statement) + "'");
        break;
      }
      if (statement.rfind(".version", 0) == 0 ||
          statement.rfind(".target", 0) == 0 ||
          statement.rfind(".address_size", 0) == 0)
        continue;
      if (statement.find(".entry") != std::string_view::npos &&
          terminator == '{') {
        parseEntry(statement, *module);
        continue;
      }
      if (statement.rfind(".global", 0) == 0) {
        // An initializer's `{...}` belongs to the declaration.
        if (terminator == '{')
          statement = restOfStatement(statement);
        declareGlobal(statement, *module);
        continue;
      }
      if (statement.find(".shared") != std::string_view::npos &&
          terminator == ';') {
        moduleShared[variableName(statement)] =
            declareShared(statement, moduleSharedBytes);
        continue;
      }
      if (statement.empty() && terminator == ';')
        continue;
      fail("unsupported module-level statement '" + std::string(statement) +
           "'");
    }
  } catch (const Failure &failure) {
    error = failure.message;
    return nullptr;
  }
  return module;
}

void Parser::parseParameters(std::string_view list, Kernel &kernel) {
  uint32_t offset = 0;
  for (std::string_view declaration : splitTopLevel(list, ',')) {
    if (declaration.empty())
      continue;
    // .param .u64 .ptr .align 1 NAME | .param .align 8 .b8 NAME[16]
    std::vector<std::string_view> words;
    size_t i = 0;
    while (i < declaration.size()) {
      while (i < declaration.size() && isspace(declaration[i]))
        ++i;
      size_t start = i;
      while (i < declaration.size() && !isspace(declaration[i]))
        ++i;
      if (i > start)
        words.push_back(declaration.substr(start, i - start));
    }
    if (words.size() < 3 || words[0] != ".param")
      fail("unsupported parameter '" + std::string(declaration) + "'");
    uint32_t size = 0, align = 0;
    for (size_t w = 1; w + 1 < words.size(); ++w) {
      if (words[w] == ".align") {
        align = count(words[w + 1], 256, "an alignment");
        ++w;
      } else if (std::optional<Type> type = parseType(words[w].substr(1))) {
        size = typeBytes(*type);
      }
    }
    std::string_view name = words.back();
    if (size_t open = name.find('['); open != std::string_view::npos) {
      size *= count(name.substr(open + 1), 4096, "a parameter's size");
      name = name.substr(0, open);
    } else if (!align) {
      align = size;
    }
    if (!size)
      fail("unsupported parameter '" + std::string(declaration) + "'");
    align = align ? align : 1;
    offset = (offset + align - 1) / align * align;
    parameterOffsets[std::string(name)] = offset;
    kernel.parameters.push_back({std::string(name), offset, size});
    offset += size;
  }
  kernel.parameterBytes = offset;
}

void Parser::parseEntry(std::string_view header, Module &module) {
  Kernel kernel;
  size_t open = header.find('('), close = header.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos)
    fail("an .entry without a parameter list");
  std::string_view beforeParams = trim(header.substr(0, open));
  kernel.name =
      std::string(beforeParams.substr(beforeParams.find_last_of(" \t") + 1));
  parseParameters(header.substr(open + 1, close - open - 1), kernel);
  // Performance directives (.maxntid 128, 1, 1 .minnctapersm 3 ...): each a
  // name and whole numbers. The emulator keeps the thread bound.
  std::string directives(header.substr(close + 1));
  std::replace(directives.begin(), directives.end(), ',', ' ');
  std::string_view rest = directives, directive;
  uint32_t threads = 1;
  while (!(rest = trim(rest)).empty()) {
    size_t end = rest.find_first_of(" \t\r\n");
    std::string_view word = rest.substr(0, end);
    rest = end == std::string_view::npos ? "" : rest.substr(end);
    if (word.front() == '.') {
      directive = word;
      threads = 1;
      continue;
    }
    if (directive.empty() ||
        word.find_first_not_of("0123456789") != std::string_view::npos)
      fail("'" + std::string(word) + "' after an .entry's parameters is not " +
           "a directive's number");
    if (directive == ".maxntid" || directive == ".reqntid") {
      threads *= count(word, 1024, "a thread count");
      if (threads > 1024)
        fail("more than 1024 threads a block in " + std::string(directive));
      kernel.maxThreads = threads;
    }
  }

  registerRanges.clear();
  registerCount = 0;
  sharedSymbols = moduleShared;
  labels.clear();
  branches.clear();
  sawDynamicShared = false;
  uint32_t shared = moduleSharedBytes;
  while (true) {
    char terminator;
    std::string_view statement = nextStatement(terminator);
    if (terminator == '}' && statement.empty())
      break;
    if (!terminator)
      fail("the body of " + kernel.name + " does not end");
    if (terminator == ':') {
      labels[std::string(statement)] = kernel.code.size();
      continue;
    }
    if (terminator == '{') {
      if (statement.empty())
        fail("a nested scope in " + kernel.name);
      // A vector operand opens: the statement continues to its `;`.
      parseInstruction(restOfStatement(statement), kernel);
      continue;
    }
    if (statement.empty())
      continue;
    if (statement.rfind(".reg", 0) == 0) {
      declareRegisters(statement);
      continue;
    }
    if (statement.find(".shared") != std::string_view::npos &&
        statement[0] == '.') {
      std::string name = variableName(statement);
      if (statement.rfind(".extern", 0) == 0) {
        sawDynamicShared = true;
        sharedSymbols[name] = ~0u; // patched once the static size is known
        continue;
      }
      sharedSymbols[name] = declareShared(statement, shared);
      continue;
    }
    // `.pragma "nounroll";` (LLVM's mark on a loop it must not unroll)
    // guides ptxas alone.
    if (statement == ".pragma \"nounroll\"")
      continue;
    if (statement[0] == '.')
      fail("unsupported directive '" + std::string(statement) + "'");
    parseInstruction(statement, kernel);
  }
  kernel.staticShared = (shared + 15) / 16 * 16;
  if (sawDynamicShared)
    for (Instruction &inst : kernel.code)
      for (Operand &operand : inst.operands)
        if (operand.kind == Operand::Imm && operand.imm == int64_t(~0u))
          operand.imm = kernel.staticShared;
  for (auto &[index, label] : branches) {
    auto it = labels.find(label);
    if (it == labels.end())
      fail("branch to an unknown label " + label);
    kernel.code[index].target = it->second;
  }
  kernel.registers = registerCount;
  module.kernels[kernel.name] = std::move(kernel);
}

void Parser::declareRegisters(std::string_view declaration) {
  // .reg .b32 %r<1249>;  or  .reg .pred %p;
  size_t percent = declaration.find('%');
  if (percent == std::string_view::npos)
    fail("unsupported register declaration");
  std::string_view names = declaration.substr(percent);
  for (std::string_view name : splitTopLevel(names, ',')) {
    size_t angle = name.find('<');
    uint32_t registers = 1;
    std::string prefix(name);
    if (angle != std::string_view::npos) {
      registers =
          count(name.substr(angle + 1), kMaxRegisters, "a register count");
      prefix = std::string(name.substr(0, angle));
    }
    registerRanges[prefix] = {registerCount, registers};
    registerCount += registers;
    if (registerCount > kMaxRegisters)
      fail("more than " + std::to_string(kMaxRegisters) + " registers");
  }
}

uint32_t Parser::declareShared(std::string_view declaration, uint32_t &top) {
  // .shared .align 16 .b8 NAME[8704];  or one byte, .shared .b8 NAME; (what
  // LLVM prints for MLIR's gpu.dynamic_shared_memory: ptxas gives it a
  // byte, and the kernel addresses the dynamic shared memory from it), or
  // one element of another type, .shared .align 16 .f32 NAME; (what LLVM
  // makes of a one-element array).
  uint32_t align = 1;
  if (size_t at = declaration.find(".align"); at != std::string_view::npos)
    align = count(declaration.substr(at + 6), 256, "an alignment");
  uint64_t elementBytes = 0;
  for (std::string_view word : splitTopLevel(declaration, ' '))
    if (word.size() > 1 && word[0] == '.')
      if (std::optional<Type> type = parseType(word.substr(1)))
        elementBytes = typeBytes(*type);
  size_t open = declaration.find('['), close = declaration.find(']');
  bool scalar =
      open == std::string_view::npos && close == std::string_view::npos;
  if ((!scalar &&
       (open == std::string_view::npos || close == std::string_view::npos)) ||
      !elementBytes)
    fail("unsupported shared declaration '" + std::string(declaration) + "'");
  uint64_t bytes =
      elementBytes *
      (scalar ? 1
              : count(declaration.substr(open + 1, close - open - 1),
                      kMaxSharedBytes, "a shared variable's size"));
  align = align ? align : 1;
  uint64_t offset = (uint64_t(top) + align - 1) / align * align;
  if (offset + bytes > kMaxSharedBytes)
    fail("more than " + std::to_string(kMaxSharedBytes) +
         " bytes of shared memory");
  top = static_cast<uint32_t>(offset + bytes);
  return static_cast<uint32_t>(offset);
}

void Parser::declareGlobal(std::string_view declaration, Module &module) {
  // .global .align 8 .b8 NAME[80] = {1, 0, ...};  (or without `= {...}`)
  size_t equals = declaration.find('=');
  std::string_view head = trim(declaration.substr(0, equals));
  size_t open = head.find('['), close = head.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos ||
      head.find(".b8") == std::string_view::npos)
    fail("unsupported global declaration '" + std::string(head) + "'");
  uint32_t align = 1;
  if (size_t at = head.find(".align"); at != std::string_view::npos)
    align = count(head.substr(at + 6), 256, "an alignment");
  std::vector<uint8_t> bytes(count(head.substr(open + 1, close - open - 1),
                                   kMaxGlobalBytes, "a global's size"));
  if (equals != std::string_view::npos) {
    std::string_view init = trim(declaration.substr(equals + 1));
    if (init.size() < 2 || init.front() != '{' || init.back() != '}')
      fail("unsupported global initializer");
    std::vector<std::string_view> values =
        splitTopLevel(init.substr(1, init.size() - 2), ',');
    if (values.size() > bytes.size())
      fail("a global initializer longer than its variable");
    for (size_t i = 0; i < values.size(); ++i)
      bytes[i] = static_cast<uint8_t>(parseImmediate(values[i]));
  }
  uint64_t address = allocate(bytes, align ? align : 1);
  if (!address)
    fail("out of memory for a global variable");
  module.globals.push_back(address);
  globalSymbols[variableName(head)] = address;
}

uint64_t Parser::count(std::string_view text, uint64_t limit,
                       const char *what) {
  std::optional<uint64_t> value = parseCount(text, limit);
  if (!value)
    fail(std::string(what) + " is not a number up to " + std::to_string(limit));
  return *value;
}

uint32_t Parser::registerSlot(std::string_view name) {
  if (name == "_")
    return registerCount; // a sink: one slot past the declared ones
  if (auto it = registerRanges.find(std::string(name));
      it != registerRanges.end() && it->second.second == 1)
    return it->second.first;
  size_t digits = name.size();
  while (digits > 0 && isdigit(static_cast<unsigned char>(name[digits - 1])))
    --digits;
  auto it = registerRanges.find(std::string(name.substr(0, digits)));
  if (it == registerRanges.end() || digits == name.size())
    fail("undeclared register " + std::string(name));
  uint64_t index = count(name.substr(digits), kMaxRegisters, "a register");
  if (index >= it->second.second)
    fail("register " + std::string(name) + " beyond its declaration");
  return it->second.first + index;
}

int64_t Parser::parseImmediate(std::string_view text) {
  std::string s(text);
  char *end = nullptr;
  int64_t value;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F'))
    value = static_cast<int64_t>(std::strtoull(s.c_str() + 2, &end, 16));
  else if (s.size() > 2 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D'))
    value = static_cast<int64_t>(std::strtoull(s.c_str() + 2, &end, 16));
  else if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    value = static_cast<int64_t>(std::strtoull(s.c_str() + 2, &end, 16));
  else
    value = std::strtoll(s.c_str(), &end, 10);
  // An integer may end in U (unsigned), as LLVM writes prmt's selectors.
  bool integer = s.size() < 2 || s[0] != '0' ||
                 (s[1] != 'f' && s[1] != 'F' && s[1] != 'd' && s[1] != 'D');
  if (integer && end && (*end == 'U' || *end == 'u'))
    ++end;
  if (!end || *end)
    fail("unsupported operand '" + s + "'");
  return value;
}

void Parser::parseOperand(std::string_view text, Instruction &inst) {
  Operand operand;
  if (text.empty())
    fail("an empty operand");
  if (text.front() == '{') {
    if (text.back() != '}')
      fail("unsupported operand '" + std::string(text) + "'");
    for (std::string_view element :
         splitTopLevel(text.substr(1, text.size() - 2), ','))
      parseOperand(element, inst);
    return;
  }
  if (text.front() == '[') {
    if (text.back() != ']')
      fail("unsupported operand '" + std::string(text) + "'");
    std::string_view inside = trim(text.substr(1, text.size() - 2));
    size_t plus = inside.find('+');
    std::string_view base = trim(inside.substr(0, plus));
    if (base.empty())
      fail("an address with no base: '" + std::string(text) + "'");
    operand.kind = Operand::Mem;
    if (plus != std::string_view::npos)
      operand.imm = parseImmediate(trim(inside.substr(plus + 1)));
    if (base.front() == '%') {
      operand.reg = registerSlot(base);
    } else if (auto it = parameterOffsets.find(std::string(base));
               it != parameterOffsets.end()) {
      operand.reg = Operand::kNoReg;
      operand.imm += it->second;
    } else if (auto it = sharedSymbols.find(std::string(base));
               it != sharedSymbols.end()) {
      operand.reg = Operand::kNoReg;
      operand.imm += it->second;
    } else {
      fail("unknown address '" + std::string(base) + "'");
    }
    inst.operands.push_back(operand);
    return;
  }
  if (text.front() == '%') {
    static const std::unordered_map<std::string_view, Special> specials = {
        {"%tid.x", Special::TidX},       {"%tid.y", Special::TidY},
        {"%tid.z", Special::TidZ},       {"%ntid.x", Special::NtidX},
        {"%ntid.y", Special::NtidY},     {"%ntid.z", Special::NtidZ},
        {"%ctaid.x", Special::CtaidX},   {"%ctaid.y", Special::CtaidY},
        {"%ctaid.z", Special::CtaidZ},   {"%nctaid.x", Special::NctaidX},
        {"%nctaid.y", Special::NctaidY}, {"%nctaid.z", Special::NctaidZ},
        {"%laneid", Special::LaneId},
    };
    if (auto it = specials.find(text); it != specials.end()) {
      operand.kind = Operand::Sreg;
      operand.imm = static_cast<int64_t>(it->second);
    } else if (text.find('.') != std::string_view::npos) {
      fail("unsupported special register " + std::string(text));
    } else {
      operand.kind = Operand::Reg;
      operand.reg = registerSlot(text);
    }
    inst.operands.push_back(operand);
    return;
  }
  if (text == "_") {
    operand.kind = Operand::Reg;
    operand.reg = registerSlot(text);
    inst.operands.push_back(operand);
    return;
  }
  if (isdigit(static_cast<unsigned char>(text.front())) ||
      text.front() == '-') {
    operand.imm = parseImmediate(text);
    inst.operands.push_back(operand);
    return;
  }
  if (inst.op == Opcode::Bra) {
    branches.push_back({0, std::string(text)}); // index set by the caller
    return;
  }
  if (auto it = sharedSymbols.find(std::string(text));
      it != sharedSymbols.end()) {
    operand.imm = it->second;
    inst.operands.push_back(operand);
    return;
  }
  if (auto it = globalSymbols.find(std::string(text));
      it != globalSymbols.end()) {
    operand.imm = static_cast<int64_t>(it->second);
    inst.operands.push_back(operand);
    return;
  }
  fail("unknown symbol '" + std::string(text) + "'");
}

void Parser::parseInstruction(std::string_view statement, Kernel &kernel) {
  Instruction inst;
  inst.line = line;
  if (statement.front() == '@') {
    size_t space = statement.find_first_of(" \t");
    if (space == std::string_view::npos)
      fail("a guard with no instruction: '" + std::string(statement) + "'");
    std::string_view guard = statement.substr(1, space - 1);
    if (!guard.empty() && guard.front() == '!') {
      inst.guardNegated = true;
      guard.remove_prefix(1);
    }
    inst.guard = registerSlot(guard);
    statement = trim(statement.substr(space));
  }
  size_t space = statement.find_first_of(" \t\n");
  std::string_view opcode = statement.substr(0, space);
  std::string_view operands =
      space == std::string_view::npos ? "" : trim(statement.substr(space));
  decodeOpcode(opcode, inst);
  size_t branchesBefore = branches.size();
  std::vector<std::string_view> texts = splitTopLevel(operands, ',');
  for (std::string_view operand : texts)
    parseOperand(operand, inst);
  // mov.b32 {%rs1, %rs2}, %r1 splits a register into halves; mov.b32 %r1,
  // {%rs1, %rs2} joins them (the first is the low half).
  if (inst.op == Opcode::Mov && texts.size() == 2)
    inst.vec = texts[0].front() == '{'   ? kMovSplit
               : texts[1].front() == '{' ? kMovJoin
                                         : 1;
  if (inst.op == Opcode::Bra) {
    if (branches.size() != branchesBefore + 1)
      fail("a branch without a label");
    branches.back().first = kernel.code.size();
  }
  checkOperands(inst, [&](const std::string &message) {
    fail(message + " in '" + std::string(statement) + "'");
  });
  kernel.code.push_back(std::move(inst));
}

/// Arithmetic runs on integers and f32 only (halves are converted first),
/// and add, sub, mul and fma on pairs of f32; refuses the opcodes that do
/// not exist for the type.
template <typename Fail>
static void checkArithmeticType(const Instruction &inst, Fail unsupported) {
  if (inst.type == Type::F32x2) {
    if (inst.op != Opcode::Add && inst.op != Opcode::Sub &&
        inst.op != Opcode::Mul && inst.op != Opcode::Fma)
      unsupported();
    return;
  }
  bool halfOrDouble = inst.type == Type::F16 || inst.type == Type::BF16 ||
                      inst.type == Type::F64 || inst.type == Type::F16x2 ||
                      inst.type == Type::BF16x2;
  if (halfOrDouble && inst.op != Opcode::Mov && inst.op != Opcode::Selp)
    unsupported();
  switch (inst.op) {
  case Opcode::Rem:
  case Opcode::And:
  case Opcode::Or:
  case Opcode::Xor:
  case Opcode::Not:
  case Opcode::Shl:
  case Opcode::Shr:
  case Opcode::Bfe:
  case Opcode::Mad:
  case Opcode::MulWide:
  case Opcode::MulHi:
    if (inst.type == Type::F32)
      unsupported();
    return;
  case Opcode::Fma:
  case Opcode::Rcp:
  case Opcode::Ex2:
  case Opcode::Copysign:
    if (inst.type != Type::F32)
      unsupported();
    return;
  default:
    return;
  }
}

namespace {
/// An opcode's dot-separated words: the base first, then the types it
/// names (also listed in order in `types`) and its modifiers.
struct OpcodeWords {
  explicit OpcodeWords(std::string_view opcode) : parts(splitDots(opcode)) {
    for (size_t i = 1; i < parts.size(); ++i)
      if (std::optional<Type> type = parseType(parts[i]))
        types.push_back(*type);
  }
  std::string_view base() const { return parts[0]; }
  bool has(std::string_view word) const {
    return std::find(parts.begin() + 1, parts.end(), word) != parts.end();
  }

  std::vector<std::string_view> parts;
  std::vector<Type> types;
};
} // namespace

// Each decoder below decodes one family of opcodes into `inst` and says
// whether `words` is of that family; `unsupported` refuses a form of it the
// emulator does not run.

/// Integer and f32 arithmetic, comparisons and bit manipulation.
template <typename Fail>
static bool decodeArithmetic(const OpcodeWords &words, Instruction &inst,
                             Fail unsupported) {
  static const std::unordered_map<std::string_view, Opcode> simple = {
      {"mov", Opcode::Mov},
      {"add", Opcode::Add},
      {"sub", Opcode::Sub},
      {"div", Opcode::Div},
      {"rem", Opcode::Rem},
      {"min", Opcode::Min},
      {"max", Opcode::Max},
      {"neg", Opcode::Neg},
      {"abs", Opcode::Abs},
      {"and", Opcode::And},
      {"or", Opcode::Or},
      {"xor", Opcode::Xor},
      {"not", Opcode::Not},
      {"shl", Opcode::Shl},
      {"shr", Opcode::Shr},
      {"bfe", Opcode::Bfe},
      {"selp", Opcode::Selp},
      {"fma", Opcode::Fma},
      {"rcp", Opcode::Rcp},
      {"ex2", Opcode::Ex2},
      {"copysign", Opcode::Copysign},
  };
  std::string_view base = words.base();
  size_t typeCount = words.types.size();
  if (auto it = simple.find(base); it != simple.end()) {
    inst.op = it->second;
    if (typeCount != 1)
      unsupported();
    if ((inst.op == Opcode::Rcp || inst.op == Opcode::Ex2) &&
        !words.has("approx") && !words.has("rn"))
      unsupported();
    checkArithmeticType(inst, unsupported);
    return true;
  }
  if (base == "mul" || base == "mad") {
    bool wide = words.has("wide"), hi = words.has("hi");
    if (typeCount != 1 || (base == "mad" && (wide || hi)))
      unsupported();
    inst.op = base == "mad" ? Opcode::Mad
              : wide        ? Opcode::MulWide
              : hi          ? Opcode::MulHi
                            : Opcode::Mul;
    checkArithmeticType(inst, unsupported);
    return true;
  }
  if (base == "shf") {
    // shf.{l,r}.{wrap,clamp}.b32: a funnel shift of the pair {b, a}.
    bool left = words.has("l"), wrap = words.has("wrap");
    if (typeCount != 1 || inst.type != Type::B32 || left == words.has("r") ||
        wrap == words.has("clamp"))
      unsupported();
    inst.op = Opcode::Shf;
    inst.cmp = (left ? kShfLeft : 0) | (wrap ? 0 : kShfClamp);
    return true;
  }
  if (base == "prmt") {
    // prmt.b32 in its default mode only (LLVM packs two bf16 with it
    // before sm_80, which has no cvt to bf16x2).
    if (typeCount != 1 || inst.type != Type::B32 || words.parts.size() != 2)
      unsupported();
    inst.op = Opcode::Prmt;
    return true;
  }
  if (base == "setp") {
    if (typeCount != 1 || words.parts.size() < 3)
      unsupported();
    std::optional<Compare> compare = parseCompare(words.parts[1]);
    if (!compare)
      unsupported();
    inst.op = Opcode::Setp;
    inst.cmp = static_cast<uint8_t>(*compare);
    return true;
  }
  return false;
}

/// Conversions between types and between address spaces.
template <typename Fail>
static bool decodeConversion(const OpcodeWords &words, Instruction &inst,
                             Fail unsupported) {
  if (words.base() == "cvt") {
    if (words.types.size() != 2)
      unsupported();
    // Round to nearest (or exact) only: the kernels use no other mode.
    for (std::string_view mode : {"rz", "rm", "rp", "rzi", "rmi", "rpi"})
      if (words.has(mode))
        unsupported();
    inst.op = Opcode::Cvt;
    inst.type = words.types[0];
    inst.srcType = words.types[1];
    return true;
  }
  if (words.base() == "cvta") {
    // cvta.to.global.u64: global addresses are generic ones here.
    if (!words.has("to") || !words.has("global"))
      unsupported();
    inst.op = Opcode::Cvta;
    return true;
  }
  return false;
}

/// Loads, stores, asynchronous copies and ldmatrix.
template <typename Fail>
static bool decodeMemory(const OpcodeWords &words, Instruction &inst,
                         Fail unsupported) {
  std::string_view base = words.base();
  const std::vector<std::string_view> &parts = words.parts;
  if (base == "ld" || base == "st") {
    inst.op = base == "ld" ? Opcode::Ld : Opcode::St;
    inst.space = words.has("global")   ? Space::Global
                 : words.has("shared") ? Space::Shared
                 : words.has("param")  ? Space::Param
                                       : Space::None;
    if (inst.space == Space::None || words.types.size() != 1)
      unsupported();
    inst.vec = words.has("v4") ? 4 : words.has("v2") ? 2 : 1;
    return true;
  }
  if (base == "cp") {
    if (parts.size() >= 3 && parts[1] == "async" && parts[2] == "commit_group")
      inst.op = Opcode::CpAsyncCommit;
    else if (parts.size() >= 3 && parts[1] == "async" &&
             (parts[2] == "wait_group" || parts[2] == "wait_all"))
      inst.op = Opcode::CpAsyncWait;
    else if (parts.size() == 5 && parts[1] == "async" &&
             (parts[2] == "cg" || parts[2] == "ca") && parts[3] == "shared" &&
             parts[4] == "global")
      inst.op = Opcode::CpAsync;
    else
      unsupported();
    inst.vec = parts[2] == "wait_all";
    return true;
  }
  if (base == "ldmatrix") {
    if (!words.has("m8n8") || !words.has("shared") || inst.type != Type::B16)
      unsupported();
    inst.op = Opcode::Ldmatrix;
    inst.vec = words.has("x4")   ? 4
               : words.has("x2") ? 2
               : words.has("x1") ? 1
                                 : 0;
    inst.trans = words.has("trans");
    inst.space = Space::Shared;
    if (!inst.vec)
      unsupported();
    return true;
  }
  return false;
}

/// Branches, returns, shuffles, barriers and the tensor cores' mma.
template <typename Fail>
static bool decodeControlAndWarp(const OpcodeWords &words, Instruction &inst,
                                 Fail unsupported) {
  std::string_view base = words.base();
  const std::vector<std::string_view> &parts = words.parts;
  const std::vector<Type> &types = words.types;
  if (base == "bra") {
    inst.op = Opcode::Bra;
    return true;
  }
  if (base == "ret" || base == "exit") {
    inst.op = Opcode::Ret;
    return true;
  }
  if (base == "shfl") {
    static const std::unordered_map<std::string_view, ShuffleMode> modes = {
        {"up", ShuffleMode::Up},
        {"down", ShuffleMode::Down},
        {"bfly", ShuffleMode::Bfly},
        {"idx", ShuffleMode::Idx}};
    auto it = parts.size() > 2 ? modes.find(parts[2]) : modes.end();
    if (parts.size() != 4 || parts[1] != "sync" || it == modes.end() ||
        inst.type != Type::B32)
      unsupported();
    inst.op = Opcode::Shfl;
    inst.cmp = static_cast<uint8_t>(it->second);
    return true;
  }
  if (base == "bar" || base == "barrier") {
    if (words.has("red") && words.has("or") && inst.type == Type::Pred)
      inst.op = Opcode::BarRedOr;
    else if (words.has("sync") && types.empty())
      inst.op = Opcode::BarSync;
    else
      unsupported();
    return true;
  }
  if (base == "mma") {
    // mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32
    if (!words.has("m16n8k16") || !words.has("row") || !words.has("col") ||
        types.size() != 4 || types[0] != Type::F32 || types[3] != Type::F32 ||
        types[1] != types[2] ||
        (types[1] != Type::F16 && types[1] != Type::BF16))
      unsupported();
    inst.op = Opcode::Mma;
    inst.srcType = types[1];
    return true;
  }
  return false;
}

void Parser::decodeOpcode(std::string_view opcode, Instruction &inst) {
  OpcodeWords words(opcode);
  auto unsupported = [&] {
    fail("unsupported instruction '" + std::string(opcode) + "'");
  };
  // The flags every opcode may carry; the type is the last one named.
  inst.ftz = words.has("ftz");
  inst.sat = words.has("sat");
  inst.nan = words.has("NaN");
  inst.roundDown = words.has("rm");
  inst.type = words.types.empty() ? Type::None : words.types.back();
  if (!decodeArithmetic(words, inst, unsupported) &&
      !decodeConversion(words, inst, unsupported) &&
      !decodeMemory(words, inst, unsupported) &&
      !decodeControlAndWarp(words, inst, unsupported))
    unsupported();
}

std::unique_ptr<Module> attn::emulator::parsePTX(std::string_view text,
                                                 GlobalAllocator allocate,
                                                 std::string &error) {
  return Parser(text, allocate).parse(error);
}
